"""rows-v1 on Spark with the Arrow path in Spark's Python workers (``mapInArrow``).

Each partition's rows reach a Python worker as Arrow batches; the worker writes and hashes their
canonical lines as :func:`ubunye_rows.fingerprint` does for an Arrow table (the native kernel,
on the worker's cores) and sends back one row: its row count and its two lane sums cut into the
same 22/21/21-bit pieces as the JVM path, which Spark then sums as ``long``. No line leaves the
worker. The lines are the Arrow path's, so the digest does not depend on the executors' Java
(before Java 19 Spark's own ``Double.toString`` is not always the shortest form).

The workers must import ``ubunye_rows`` and ``pyarrow``; :mod:`ubunye_rows.hashing.spark` falls
back to the JVM path when they cannot, and when a worker cannot write a line
(:class:`WorkerCannotWriteLine`, e.g. a date past the year 9999, which Spark holds and writes).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from ubunye_rows.hashing.sketch import empty_bucket_arrays

if TYPE_CHECKING:
    import pyarrow as pa


class WorkerCannotWriteLine(ValueError):
    """A Python worker met a value the Arrow path cannot write as a line; Spark's own
    ``to_json`` can, so the hash is taken there instead."""


#: Columns of the one row each partition sends back, after ``rows``: lane A's pieces, then B's.
PIECE_COLUMNS = ("a42", "a21", "a0", "b42", "b21", "b0")


def arrow_worker_bucket_rows(
    df: Any, pairs: Sequence[tuple[str, str]], shifts: Sequence[int], bits: Sequence[int]
) -> list[Any]:
    """Per bucket of ``df``'s lines: (bucket, rows, the six lane piece sums), each partition
    hashed in a Python worker and the buckets summed by Spark (at most 256 rows come back).

    ``pairs`` are the frame's (name, canonical type) in frame order; the lines use those kinds.
    """
    from pyspark.sql import functions as F

    # Columns go by position, so no name is ever parsed (dots, backticks, spaces, case).
    order = sorted(range(len(pairs)), key=lambda index: pairs[index][0])
    positional = df.toDF(*[f"_c{index}" for index in range(len(pairs))])
    schema = "bucket int, rows long, " + ", ".join(f"{column} long" for column in PIECE_COLUMNS)
    work = partial(
        partition_lane_pieces,
        [f"_c{index}" for index in order],
        [pairs[index][0] for index in order],
        [pairs[index][1] for index in order],
        shifts,
        bits,
    )
    per_partition = positional.mapInArrow(work, schema)
    sums = [F.sum(column).alias(column) for column in ("rows", *PIECE_COLUMNS)]
    return per_partition.groupBy("bucket").agg(*sums).collect()


def partition_lane_pieces(
    columns: Sequence[str],
    names: Sequence[str],
    kinds: Sequence[str],
    shifts: Sequence[int],
    bits: Sequence[int],
    batches: Iterable[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """One batch with a row per bucket the partition's lines fall in: the bucket, its row
    count and its lane sums cut in pieces.

    ``columns`` are the batches' column names in line order, ``names`` the names to write.
    """
    import pyarrow as pa

    from ubunye_rows.hashing.table_lanes import table_buckets

    totals = empty_bucket_arrays()
    for group in _row_groups(batches, columns, names):
        try:
            totals += table_buckets(group, names, kinds)
        except (ValueError, OverflowError) as exc:
            raise WorkerCannotWriteLine(f"{type(exc).__name__}: {exc}") from exc
    used = [bucket for bucket in range(len(totals[0])) if totals[0][bucket]]
    values: dict[str, list[int]] = {"bucket": used, "rows": [int(totals[0][b]) for b in used]}
    for lane, sums in (("a", totals[1]), ("b", totals[2])):
        for shift, width in zip(shifts, bits, strict=True):
            values[f"{lane}{shift}"] = [(int(sums[b]) >> shift) & ((1 << width) - 1) for b in used]
    fields = [("bucket", pa.int32())] + [(name, pa.int64()) for name in list(values)[1:]]
    yield pa.RecordBatch.from_pydict(values, schema=pa.schema(fields))


def _row_groups(
    batches: Iterable[pa.RecordBatch], columns: Sequence[str], names: Sequence[str]
) -> Iterator[pa.Table]:
    """Spark's small Arrow batches, ``columns`` renamed to ``names``, gathered into tables of
    about one slice of rows each (each slice costs one pass); one group is held at a time."""
    import pyarrow as pa

    from ubunye_rows.hashing.arrow_lines import SLICE_ROWS

    pending: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pending.append(batch.select(list(columns)).rename_columns(list(names)))
        rows += batch.num_rows
        if rows >= SLICE_ROWS:
            yield pa.Table.from_batches(pending)
            pending, rows = [], 0
    if pending:
        yield pa.Table.from_batches(pending)
