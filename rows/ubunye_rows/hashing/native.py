"""The native rows-v1 kernel (``ubunye_rows._kernel``, Rust): importing it, once.

The kernel writes each row's canonical line from the Arrow buffers, hashes it and adds its lanes
and sketch bucket, on threads without the GIL (:mod:`ubunye_rows.hashing.table_lanes` decides
what it is given). When the extension cannot be imported, or comes from another build (it lacks a
function the Python path calls), every table takes the Python path, the specification, with one
warning naming the problem and the command that installs the kernel. Where the kernel
hands a table back (a value it refuses, or a panic it caught, which is warned of as the bug it
is) :func:`call_or_fall_back` gives None and the caller takes the Python path.
"""

from __future__ import annotations

import os
import warnings
from collections import Counter
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

#: The one command that installs the kernel (a wheel, or a build from source with Rust).
INSTALL_COMMAND = "pip install ubunye-rows  (from a clone: pip install ./rows)"

#: The one setting for the kernel: ``auto`` (default) uses it when it imports; ``native`` requires
#: it (ImportError when it is missing); ``python`` never uses it: the Python path (the
#: specification) builds every line and ``hashlib`` hashes it, e.g. to compare the two.
KERNEL_ENV = "UBUNYE_HASH_KERNEL"
KERNEL_SETTINGS = ("auto", "native", "python")

#: How often the Python path stood in: ``columns`` written by it, ``tables`` hashed by it whole
#: (``panics``: of those, after a kernel panic; ``unavailable``: the extension did not import).
fallbacks: Counter[str] = Counter()

_state: dict[str, Any] = {}


class KernelMissingWarning(RuntimeWarning):
    """The native kernel could not be imported; hashing is correct but slower."""


class KernelPanicWarning(RuntimeWarning):
    """The native kernel panicked (a bug in it); the Python path hashed the data instead."""


#: What the Python path calls in the kernel. An extension from another build of ubunye-rows (an
#: editable build older than the sources beside it) can lack one: it is then not used at all.
KERNEL_FUNCTIONS = ("hash_table", "hash_lines", "sha_extensions")


def _import_kernel() -> ModuleType | None:
    if "module" not in _state:
        module, problem = _load_kernel()
        _state["module"], _state["problem"] = module, problem
        if problem is not None:
            warnings.warn(
                f"ubunye-rows: {problem}; hashing takes the Python path (same digests, several "
                f"times slower). Install it: {INSTALL_COMMAND}",
                KernelMissingWarning,
                stacklevel=3,
            )
    return _state["module"]


def _load_kernel() -> tuple[ModuleType | None, str | None]:
    """The kernel module and None, or None and why it cannot be used."""
    try:
        from ubunye_rows import _kernel
    except ImportError as error:
        return None, f"the native rows-v1 kernel did not import ({error})"
    missing = [name for name in KERNEL_FUNCTIONS if not hasattr(_kernel, name)]
    if missing:
        where = getattr(_kernel, "__file__", None) or "ubunye_rows._kernel"
        return None, (
            f"the native rows-v1 kernel {where} is from another build of ubunye-rows (it "
            f"lacks {', '.join(missing)})"
        )
    return _kernel, None


def kernel_setting() -> str:
    """``UBUNYE_HASH_KERNEL`` as one of ``KERNEL_SETTINGS``; a ValueError for any other value."""
    wanted = os.environ.get(KERNEL_ENV, "auto").strip().lower() or "auto"
    if wanted not in KERNEL_SETTINGS:
        raise ValueError(f"{KERNEL_ENV} must be auto, native or python, not {wanted!r}")
    return wanted


def kernel() -> ModuleType | None:
    """The kernel module, or None when the setting asks for the Python path or it is missing
    (an ImportError when the setting requires it)."""
    wanted = kernel_setting()
    if wanted == "python":
        return None
    module = _import_kernel()
    if module is None:
        if wanted == "native":
            problem = _state.get("problem") or "the kernel is missing"
            raise ImportError(f"{KERNEL_ENV}=native but {problem}: {INSTALL_COMMAND}")
        fallbacks["unavailable"] += 1
    return module


def call_or_fall_back(module: ModuleType, function: str, *args: Any) -> Any:
    """``module.function(*args)``, or None when the kernel hands the data back to the Python
    path: a value it refuses, or a panic (warned of with :class:`KernelPanicWarning`)."""
    try:
        return getattr(module, function)(*args)
    except module.KernelPanic as panic:
        fallbacks["tables"] += 1
        fallbacks["panics"] += 1
        warnings.warn(
            f"ubunye-rows: the native kernel panicked in {function} ({panic}); the Python path "
            "hashed the data instead (the same digest, slower). This is a bug in the kernel: "
            "please report it with the table's schema.",
            KernelPanicWarning,
            stacklevel=3,
        )
        return None
    except module.KernelFallback:
        fallbacks["tables"] += 1
        return None


def buckets_from_bytes(packed: bytes) -> np.ndarray:
    """The kernel's 768 little-endian u64 as a (3, 256) uint64 array (counts, lane A, lane B)."""
    import numpy as np

    return np.frombuffer(packed, dtype="<u8").reshape(3, 256).astype(np.uint64)


def digests_from_bytes(packed: bytes) -> np.ndarray:
    """The kernel's digests laid end to end as an (n, 32) uint8 array."""
    import numpy as np

    return np.frombuffer(packed, dtype=np.uint8).reshape(-1, 32)


def line_buckets(lines: pa.ChunkedArray, threads: int) -> np.ndarray | None:
    """Per-bucket sums of lines already built; None without the kernel or when it falls back."""
    packed = _lines_by_kernel("buckets", lines, threads)
    return None if packed is None else buckets_from_bytes(packed)


def line_digests(lines: pa.ChunkedArray, threads: int) -> np.ndarray | None:
    """Each line's SHA-256 ((n, 32) uint8) of lines already built; None without the kernel or
    when it falls back."""
    packed = _lines_by_kernel("digests", lines, threads)
    return None if packed is None else digests_from_bytes(packed)


def _lines_by_kernel(output: str, lines: pa.ChunkedArray, threads: int) -> bytes | None:
    import pyarrow as pa

    module = kernel()
    if module is None:
        return None
    data = pa.table([lines], names=["line"])
    return call_or_fall_back(module, "hash_lines", data, output, threads)
