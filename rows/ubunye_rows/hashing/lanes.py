"""Lane sums of canonical lines: each line's SHA-256, bytes 0..8 and 8..16 summed modulo 2**64.

Two engines give the same sums. DataFusion's built-in ``sha256`` hashes an Arrow array
in native code on several cores without the GIL; it is used when it imports. Otherwise
``hashlib`` hashes one line at a time straight from Arrow's buffers (one core: a short
line's hash holds the GIL). ``UBUNYE_HASH_THREADS`` caps the threads hashing may use;
:func:`sum_slices_lanes` builds and hashes slices of a table on that many threads.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import pyarrow as pa

#: Setting (environment variable) for the number of threads hashing may use; default: the
#: usable cores. The digest never depends on it.
HASH_THREADS_ENV = "UBUNYE_HASH_THREADS"

#: Setting that picks the lane engine: ``auto`` (default), ``datafusion`` or ``hashlib``.
HASH_ENGINE_ENV = "UBUNYE_HASH_ENGINE"

ENGINES = ("datafusion", "hashlib")

#: Below this many lines a single partition is cheaper than spreading them over threads.
_ROWS_PER_PARTITION = 16_384

_TABLE = "ubunye_lines"
_COLUMN = "line"

_Slice = TypeVar("_Slice")

#: Per-thread state: DataFusion sessions, and whether the thread is a slice worker.
_local = threading.local()


def hash_threads() -> int:
    """Threads hashing may use: ``UBUNYE_HASH_THREADS`` when set, else the usable cores.

    Inside a worker of :func:`sum_slices_lanes` it is 1: the pool already uses the cores.
    """
    if getattr(_local, "in_pool", False):
        return 1
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
    """The engine ``sum_line_lanes`` uses: the setting, else DataFusion when it imports."""
    wanted = os.environ.get(HASH_ENGINE_ENV, "auto").strip().lower() or "auto"
    if wanted not in ("auto", *ENGINES):
        raise ValueError(f"{HASH_ENGINE_ENV} must be auto, datafusion or hashlib, not {wanted!r}")
    if wanted == "hashlib":
        return "hashlib"
    if _datafusion_imports():
        return "datafusion"
    if wanted == "datafusion":
        raise ImportError(f"{HASH_ENGINE_ENV}=datafusion but the datafusion package is missing")
    return "hashlib"


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

    A line's bucket is the first byte of its SHA-256 (``ubunye_rows.sketch``); the buckets'
    sums add up to :func:`sum_line_lanes`.
    """
    from ubunye_rows.sketch import empty_bucket_arrays

    pieces = _line_pieces(lines)
    if not pieces:
        return empty_bucket_arrays()
    if lane_engine() == "datafusion":
        return _datafusion_buckets(pieces, _thread_count(threads))
    return _hashlib_buckets(pieces)


def bucket_totals_lanes(totals: Any) -> tuple[int, int]:
    """The two lane sums modulo 2**64 of a (3, 256) bucket array."""
    import numpy as np

    return int(totals[1].sum(dtype=np.uint64)), int(totals[2].sum(dtype=np.uint64))


def line_digests(lines: pa.Array | pa.ChunkedArray) -> Any:
    """Each line's SHA-256 as an (n, 32) uint8 numpy array, in the order of ``lines``."""
    import numpy as np

    pieces = _line_pieces(lines)
    if lane_engine() == "datafusion":
        # One partition per piece keeps the digests in line order.
        chunks = [d for piece in pieces for d, _ in _datafusion_digests([piece], 1)]
    else:
        chunks = [_hashlib_digests(piece) for piece in pieces]
    if not chunks:
        return np.zeros((0, 32), dtype=np.uint8)
    return np.concatenate(chunks).reshape(-1, 32)


def sum_line_lanes_hashlib(lines: pa.Array | pa.ChunkedArray) -> tuple[int, int]:
    """The same sums as :func:`sum_line_lanes`, always by ``hashlib`` (the fallback engine)."""
    return bucket_totals_lanes(_hashlib_buckets(_line_pieces(lines)))


def sum_line_lanes_datafusion(
    lines: pa.Array | pa.ChunkedArray, *, threads: int | None = None
) -> tuple[int, int]:
    """The same sums as :func:`sum_line_lanes`, always by DataFusion (ImportError without it)."""
    pieces = _line_pieces(lines)
    if not pieces:
        return 0, 0
    return bucket_totals_lanes(_datafusion_buckets(pieces, _thread_count(threads)))


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
    from ubunye_rows.sketch import empty_bucket_arrays

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
    from ubunye_rows.sketch import add_digest_buckets, empty_bucket_arrays

    totals = empty_bucket_arrays()
    for piece in pieces:
        add_digest_buckets(totals, _hashlib_digests(piece), len(piece))
    return totals


_datafusion_state: dict[str, bool] = {}


def _datafusion_imports() -> bool:
    if "ok" not in _datafusion_state:
        try:
            import datafusion  # noqa: F401
        except ImportError:
            _datafusion_state["ok"] = False
        else:
            _datafusion_state["ok"] = True
    return _datafusion_state["ok"]


def _datafusion_context(partitions: int) -> Any:
    """This thread's DataFusion session for ``partitions`` partitions (sessions are not shared)."""
    from datafusion import SessionConfig, SessionContext

    contexts = getattr(_local, "contexts", None)
    if contexts is None:
        contexts = _local.contexts = {}
    if partitions not in contexts:
        config = SessionConfig().with_target_partitions(partitions)
        contexts[partitions] = SessionContext(config)
    return contexts[partitions]


def _partitions(pieces: list[pa.Array], count: int) -> list[list[pa.RecordBatch]]:
    """The lines as ``count`` (or fewer) partitions of record batches with even row counts."""
    import pyarrow as pa

    rows = sum(len(piece) for piece in pieces)
    count = max(1, min(count, rows // _ROWS_PER_PARTITION))
    per_part = -(-rows // count)
    parts: list[list[pa.RecordBatch]] = [[] for _ in range(count)]
    part = filled = 0
    for piece in pieces:
        start = 0
        while start < len(piece):
            take = min(len(piece) - start, per_part - filled)
            column = piece.slice(start, take)
            parts[part].append(pa.RecordBatch.from_arrays([column], names=[_COLUMN]))
            start, filled = start + take, filled + take
            if filled == per_part:
                part, filled = part + 1, 0
    return [p for p in parts if p]


def _datafusion_digests(pieces: list[pa.Array], threads: int) -> Iterator[tuple[Any, int]]:
    """Each result batch's SHA-256 digests by DataFusion, as (uint8 numpy array, count)."""
    import numpy as np
    import pyarrow as pa

    parts = _partitions(pieces, threads)
    context = _datafusion_context(len(parts))
    context.register_record_batches(_TABLE, parts)
    try:
        batches = context.sql(f"SELECT sha256({_COLUMN}) AS digest FROM {_TABLE}").collect()
    finally:
        context.deregister_table(_TABLE)
    for batch in batches:
        digests = batch.column(0)
        if not pa.types.is_binary(digests.type):
            digests = digests.cast(pa.binary())
        if digests.null_count:
            raise RuntimeError("DataFusion returned a null SHA-256 for a line")
        _, offset_buffer, data_buffer = digests.buffers()
        offsets = np.frombuffer(
            offset_buffer, dtype=np.int32, count=len(digests) + 1, offset=digests.offset * 4
        )
        yield np.frombuffer(data_buffer, dtype=np.uint8)[offsets[0] : offsets[-1]], len(digests)


def _datafusion_buckets(pieces: list[pa.Array], threads: int) -> Any:
    """Per-bucket counts and lane sums by DataFusion's ``sha256``, over ``threads`` partitions."""
    from ubunye_rows.sketch import add_digest_buckets, empty_bucket_arrays

    totals = empty_bucket_arrays()
    for digests, count in _datafusion_digests(pieces, threads):
        add_digest_buckets(totals, digests, count)
    return totals
