"""Lane sums of canonical lines: each line's SHA-256, bytes 0..8 and 8..16 summed modulo 2**64.

Two engines give the same sums. The native kernel (``ubunye_rows._kernel``) hashes an Arrow
array on several cores without the GIL; it is used when it imports and ``UBUNYE_HASH_KERNEL``
(``ubunye_rows.hashing.native``) is not ``python``. Otherwise ``hashlib``
hashes one line at a time straight from Arrow's buffers (one core: a short line's hash holds
the GIL). ``UBUNYE_HASH_THREADS`` caps the threads hashing may use; :func:`sum_slices_lanes`
builds and hashes slices of a table on that many threads.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from ubunye_rows.hashing import native
from ubunye_rows.hashing.sketch import add_digest_buckets, empty_bucket_arrays

if TYPE_CHECKING:
    import pyarrow as pa

#: Setting (environment variable) for the number of threads hashing may use; default: the
#: usable cores. The digest never depends on it.
HASH_THREADS_ENV = "UBUNYE_HASH_THREADS"

_Slice = TypeVar("_Slice")

#: Per-thread state: whether the thread is a slice worker, and the cores it leaves to other work.
_local = threading.local()


def hash_threads() -> int:
    """Threads hashing may use: ``UBUNYE_HASH_THREADS`` when set, else the usable cores, less
    the cores :func:`leaving_cores` lends (never below 1).

    Inside a worker of :func:`sum_slices_lanes` it is 1: the pool already uses the cores.
    """
    if getattr(_local, "in_pool", False):
        return 1
    lent = sum(count for count, busy in _lends() if busy is None or busy())
    return max(1, _allowed_threads() - lent)


def lending_may_end() -> bool:
    """True while a core lent by :func:`leaving_cores` goes back once the work beside the hash
    ends: a long hash then takes its threads a slice at a time, to have them back at once."""
    return any(busy is not None and busy() for _, busy in _lends())


def _lends() -> list[tuple[int, Callable[[], bool] | None]]:
    return getattr(_local, "lends", [])


@contextlib.contextmanager
def leaving_cores(count: int, while_busy: Callable[[], bool] | None = None) -> Iterator[None]:
    """Within the block, hashing started from this thread leaves ``count`` cores to work that
    runs beside it in the process (a file being encoded), keeping at least one thread; with
    ``while_busy``, only while it says that work still runs."""
    if count < 0:
        raise ValueError(f"cores to leave must be >= 0, not {count}")
    before = _lends()
    _local.lends = [*before, (count, while_busy)]
    try:
        yield
    finally:
        _local.lends = before


def _allowed_threads() -> int:
    """``UBUNYE_HASH_THREADS`` when set (a whole number >= 1), else the usable cores."""
    text = os.environ.get(HASH_THREADS_ENV, "").strip()
    if text:
        try:
            count = int(text)
        except ValueError:
            count = 0
        if count < 1:
            raise ValueError(f"{HASH_THREADS_ENV} must be a whole number >= 1, not {text!r}")
        return count
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def _thread_count(threads: int | None) -> int:
    if threads is None:
        return hash_threads()
    if int(threads) < 1:
        raise ValueError(f"threads must be >= 1, not {threads}")
    return int(threads)


def lane_engine() -> str:
    """The engine ``sum_line_lanes`` uses: ``kernel`` when ``native.kernel`` gives it (the
    ``UBUNYE_HASH_KERNEL`` setting decides), else ``hashlib``."""
    return "kernel" if native.kernel() is not None else "hashlib"


def sum_line_lanes(
    lines: pa.Array | pa.ChunkedArray, *, threads: int | None = None
) -> tuple[int, int]:
    """Sums over all lines of their two lanes (SHA-256 bytes 0..8 and 8..16, big-endian uint64).

    ``lines``: a string, large_string or string_view array (or chunked array) without nulls.
    The sums are taken modulo 2**64. ``threads`` defaults to :func:`hash_threads`.
    """
    return bucket_totals_lanes(bucket_line_lanes(lines, threads=threads))


def bucket_line_lanes(lines: pa.Array | pa.ChunkedArray, *, threads: int | None = None) -> Any:
    """Per-bucket row counts and lane sums of ``lines`` as a (3, 256) uint64 numpy array.

    A line's bucket is the first byte of its SHA-256 (``ubunye_rows.hashing.sketch``); the buckets'
    sums add up to :func:`sum_line_lanes`.
    """

    pieces = _line_pieces(lines)
    if not pieces:
        return empty_bucket_arrays()
    if lane_engine() == "kernel":
        return _kernel_buckets(pieces, _thread_count(threads))
    return _hashlib_buckets(pieces)


def bucket_totals_lanes(totals: Any) -> tuple[int, int]:
    """The two lane sums modulo 2**64 of a (3, 256) bucket array."""
    import numpy as np

    return int(totals[1].sum(dtype=np.uint64)), int(totals[2].sum(dtype=np.uint64))


def line_digests(lines: pa.Array | pa.ChunkedArray) -> Any:
    """Each line's SHA-256 as an (n, 32) uint8 numpy array, in the order of ``lines``."""
    import numpy as np

    pieces = _line_pieces(lines)
    if not pieces:
        return np.zeros((0, 32), dtype=np.uint8)
    if lane_engine() == "kernel":
        digests = native.line_digests(_as_chunked(pieces), hash_threads())
        if digests is not None:
            return digests
    return np.concatenate([_hashlib_digests(piece) for piece in pieces]).reshape(-1, 32)


def sum_line_lanes_hashlib(lines: pa.Array | pa.ChunkedArray) -> tuple[int, int]:
    """The same sums as :func:`sum_line_lanes`, always by ``hashlib`` (the fallback engine)."""
    return bucket_totals_lanes(_hashlib_buckets(_line_pieces(lines)))


def sum_line_lanes_kernel(
    lines: pa.Array | pa.ChunkedArray, *, threads: int | None = None
) -> tuple[int, int]:
    """The same sums as :func:`sum_line_lanes`, always by the kernel (ImportError without it)."""
    pieces = _line_pieces(lines)
    if not pieces:
        return 0, 0
    if native.kernel() is None:
        raise ImportError(f"the native kernel is missing: {native.INSTALL_COMMAND}")
    return bucket_totals_lanes(_kernel_buckets(pieces, _thread_count(threads)))


def sum_slices_lanes(
    slices: Iterable[_Slice],
    build_lines: Callable[[_Slice], pa.Array],
    *,
    threads: int | None = None,
) -> tuple[int, int]:
    """Lane sums of every slice's lines, ``build_lines`` and hashing run on ``threads`` threads."""
    return bucket_totals_lanes(bucket_slices_lanes(slices, build_lines, threads=threads))


def bucket_slices_lanes(
    slices: Iterable[_Slice],
    build_lines: Callable[[_Slice], pa.Array],
    *,
    threads: int | None = None,
) -> Any:
    """Per-bucket counts and lane sums (a (3, 256) uint64 array) of every slice's lines,
    ``build_lines`` and hashing run on ``threads`` threads.

    At most ``threads + 1`` slices are in flight, so memory stays bounded by the slice size.
    Sums are order free, so the result is the same for any number of threads.
    """

    count = _thread_count(threads)

    def work(piece: _Slice) -> Any:
        # Each slice is built and hashed on this one thread: the pool keeps the cores busy.
        before = getattr(_local, "in_pool", False)
        _local.in_pool = True
        try:
            return bucket_line_lanes(build_lines(piece), threads=1)
        finally:
            _local.in_pool = before

    totals = empty_bucket_arrays()
    pieces = iter(slices)
    head = list(itertools.islice(pieces, 2))
    if count == 1 or len(head) < 2:
        # One slice (a small table) is hashed on this thread: a pool would only add a thread
        # start and a hand-over to every small asset's receipt.
        for piece in itertools.chain(head, pieces):
            totals += work(piece)
        return totals
    with ThreadPoolExecutor(max_workers=count, thread_name_prefix="ubunye-hash") as pool:
        for part in _bounded_map(pool, work, itertools.chain(head, pieces), count + 1):
            totals += part
    return totals


def _bounded_map(
    pool: ThreadPoolExecutor, work: Callable[[_Slice], Any], items: Iterable[_Slice], limit: int
) -> Iterator[Any]:
    """``pool.map`` that never holds more than ``limit`` unfinished items (nor their results)."""
    pending: list[Future[Any]] = []
    try:
        for item in items:
            if len(pending) >= limit:
                yield pending.pop(0).result()
            pending.append(pool.submit(work, item))
        while pending:
            yield pending.pop(0).result()
    finally:
        for future in pending:  # an error above: do not start what is still queued
            future.cancel()


def _line_pieces(lines: Any) -> list[pa.Array]:
    """The non-empty chunks of ``lines``, checked: text type, no nulls."""
    import pyarrow as pa

    if isinstance(lines, pa.ChunkedArray):
        chunks = list(lines.chunks)
        kind = lines.type
    elif isinstance(lines, pa.Array):
        chunks = [lines]
        kind = lines.type
    else:
        raise TypeError(f"canonical lines must be a pyarrow array, not {type(lines).__name__}")
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or _is_string_view(kind)):
        raise TypeError(f"canonical lines must be string or large_string, not {kind}")
    nulls = sum(chunk.null_count for chunk in chunks)
    if nulls:
        raise ValueError(f"a canonical line is never null, but {nulls} of the lines are")
    return [chunk for chunk in chunks if len(chunk)]


def _is_string_view(kind: Any) -> bool:
    import pyarrow as pa

    check = getattr(pa.types, "is_string_view", None)
    return bool(check and check(kind))


def _hashlib_digests(piece: pa.Array) -> Any:
    """The SHA-256 of every line of ``piece`` by ``hashlib``, from Arrow's data buffer (no str
    objects), laid end to end in a uint8 numpy array."""
    import numpy as np
    import pyarrow as pa

    if _is_string_view(piece.type):
        piece = piece.cast(pa.string())
    wide = pa.types.is_large_string(piece.type)
    offset_type = np.int64 if wide else np.int32
    _, offset_buffer, data_buffer = piece.buffers()
    offsets = np.frombuffer(
        offset_buffer,
        dtype=offset_type,
        count=len(piece) + 1,
        offset=piece.offset * np.dtype(offset_type).itemsize,
    )
    data = memoryview(data_buffer) if data_buffer is not None else memoryview(b"")
    sha256 = hashlib.sha256
    digests = b"".join(
        [sha256(data[start:end]).digest() for start, end in itertools.pairwise(offsets.tolist())]
    )
    return np.frombuffer(digests, dtype=np.uint8)


def _hashlib_buckets(pieces: list[pa.Array]) -> Any:
    """Per-bucket counts and lane sums by ``hashlib``."""

    totals = empty_bucket_arrays()
    for piece in pieces:
        add_digest_buckets(totals, _hashlib_digests(piece), len(piece))
    return totals


def _as_chunked(pieces: list[pa.Array]) -> pa.ChunkedArray:
    """The pieces as one chunked array of string or large_string (the kernel reads both)."""
    import pyarrow as pa

    plain = [p if not _is_string_view(p.type) else p.cast(pa.string()) for p in pieces]
    if len({p.type for p in plain}) > 1:
        plain = [p.cast(pa.large_string()) for p in plain]
    return pa.chunked_array(plain)


def _kernel_buckets(pieces: list[pa.Array], threads: int) -> Any:
    """Per-bucket counts and lane sums by the native kernel; ``hashlib`` if it is missing."""
    totals = native.line_buckets(_as_chunked(pieces), threads)
    return _hashlib_buckets(pieces) if totals is None else totals
