"""The native rows-v1 kernel (Rust, ``rows/src/``): canonical lines of Arrow data hashed on
threads with the GIL released. Private: :mod:`ubunye_rows.hashing` is its one caller.

``data`` is any Arrow producer of columns: an object with ``__arrow_c_stream__`` (a pyarrow
table or record batch reader) or ``__arrow_c_array__`` over a struct (a record batch).
Each function raises a :class:`KernelFallback` when the Python path is to hash the data instead,
``ValueError`` for a caller's mistake (``threads`` below 1, ``names`` or ``raw`` not one per
column, an ``output`` other than ``"buckets"`` or ``"digests"``), and never lets a Rust panic
through (it arrives as :class:`KernelPanic`).
"""

from typing import Literal, Protocol, TypeAlias

class _ArrowStream(Protocol):
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...

class _ArrowArray(Protocol):
    def __arrow_c_array__(
        self, requested_schema: object | None = None
    ) -> tuple[object, object]: ...

_ArrowData: TypeAlias = _ArrowStream | _ArrowArray
_Output: TypeAlias = Literal["buckets", "digests"]

__version__: str

class KernelFallback(Exception):
    """The kernel did not hash this data; the Python path does."""

class UnsupportedColumn(KernelFallback):
    """A column type the kernel does not write."""

class RefusedValue(KernelFallback):
    """A value the kernel will not write; the Python path says why."""

class KernelPanic(KernelFallback):
    """The kernel panicked (a bug in it, caught before it reached Python); the Python path
    hashes the data."""

def hash_table(
    data: _ArrowData, names: list[str], raw: list[bool], output: _Output, threads: int
) -> bytes:
    """The ``output`` of the canonical lines of ``data``'s rows: ``"buckets"``, per bucket the
    rows, lane A and lane B sums as 768 little-endian u64; ``"digests"``, every row's SHA-256
    (32 bytes each, in row order). ``names[i]`` names column ``i`` (the columns come sorted by
    name); ``raw[i]`` marks a column of value texts the Python path already wrote."""

def hash_lines(data: _ArrowData, output: _Output, threads: int) -> bytes:
    """The ``output`` (as :func:`hash_table`) of lines already built: the first column."""

def sha_extensions() -> bool:
    """True when the CPU has the SHA extensions (SHA-NI) the kernel's SHA-256 uses."""

def _panic_for_test(data: _ArrowData, threads: int) -> bytes:
    """Test only, not part of the API: imports ``data``, then panics on one of the kernel's hash
    threads, as a bug in the writer would; always raises :class:`KernelPanic`."""
