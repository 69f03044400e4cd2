"""rows-v1 fingerprints of any frame: dispatch by the frame's library, and honest failure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ubunye_rows.hashing.canonical import canonical_lines
from ubunye_rows.hashing.digest import (
    Fingerprint,
    data_hash,
    line_lanes,
    prefixed_sha256,
    schema_hash,
)
from ubunye_rows.hashing.lanes import bucket_totals_lanes
from ubunye_rows.hashing.sketch import BUCKETS, Sketch
from ubunye_rows.hashing.table_lanes import table_buckets
from ubunye_rows.hashing.types import refuse_duplicate_names, schema_pairs


def arrow_schema_pairs(table: Any) -> list[tuple[str, str]]:
    """``(name, canonical type)`` for each column of an Arrow table or record batch."""
    return schema_pairs(table.schema)


def _as_table(data: Any) -> Any:
    import pyarrow as pa

    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.Table):
        return data
    raise TypeError(f"expected a pyarrow Table or RecordBatch, not {type(data).__name__}")


def arrow_fingerprint_or_raise(data: Any) -> Fingerprint:
    """The fingerprint of an Arrow table or record batch; raises when a row cannot be written."""
    table = _as_table(data)
    pairs = arrow_schema_pairs(table)
    refuse_duplicate_names(table.column_names)
    names = sorted(table.column_names)
    kinds = dict(pairs)

    # A table without columns sums to zero, as the reference has always recorded it.
    if not names:
        sketch = Sketch.of_rows_only(pairs, table.num_rows)
        return Fingerprint(
            schema_hash=schema_hash(pairs),
            data_hash=data_hash(pairs, table.num_rows, (0, 0)),
            row_count=table.num_rows,
            sketch=sketch,
        )
    ordered_kinds = [kinds[name] for name in names]
    totals = table_buckets(table, names, ordered_kinds)
    return Fingerprint(
        schema_hash=schema_hash(pairs),
        data_hash=data_hash(pairs, table.num_rows, bucket_totals_lanes(totals)),
        row_count=table.num_rows,
        sketch=Sketch.from_arrays(pairs, totals),
    )


def fingerprint_rows(
    rows: Iterable[Mapping[str, Any]], schema: Sequence[tuple[str, str]]
) -> Fingerprint:
    """The fingerprint of rows already in memory, one canonical line at a time (the spec path)."""

    counts, lane_a, lane_b = [0] * BUCKETS, [0] * BUCKETS, [0] * BUCKETS
    for line in canonical_lines(rows, schema):
        a, b = line_lanes(line)
        bucket = a >> 56  # the first byte of the line's SHA-256
        counts[bucket] += 1
        lane_a[bucket] += a
        lane_b[bucket] += b
    sketch = Sketch.from_arrays(schema, [counts, lane_a, lane_b])
    return Fingerprint(
        schema_hash=schema_hash(schema),
        data_hash=data_hash(schema, sketch.rows, sketch.lane_sums()),
        row_count=sketch.rows,
        sketch=sketch,
    )


def failed_fingerprint(frame: Any, error: BaseException) -> Fingerprint:
    """What a record says when the rows could not be read: no data hash, no row count, why."""
    try:
        schema_text = str(getattr(frame, "schema", ""))
    except Exception:
        schema_text = ""
    return Fingerprint(
        schema_hash=prefixed_sha256(schema_text),
        data_hash=None,
        row_count=None,
        error=f"{type(error).__name__}: {error}",
    )


def fingerprint_arrow(data: Any) -> Fingerprint:
    """The fingerprint of an Arrow table or record batch, or an honest failure (never raises)."""
    try:
        return arrow_fingerprint_or_raise(data)
    except Exception as exc:
        return failed_fingerprint(data, exc)


def _library(frame: Any) -> str:
    """The top-level package a frame's type comes from, read without importing anything."""
    return (getattr(type(frame), "__module__", "") or "").split(".")[0]


def _fingerprint_or_raise(frame: Any, time_zone: str | None) -> Fingerprint:
    library = _library(frame)
    if library == "pyspark":  # classic and Connect DataFrames alike
        from ubunye_rows.hashing.spark import fingerprint_spark

        return fingerprint_spark(frame)
    if library == "pandas":
        from ubunye_rows.hashing.frames import pandas_to_arrow

        return arrow_fingerprint_or_raise(pandas_to_arrow(frame, time_zone))
    if library == "pyarrow":
        return arrow_fingerprint_or_raise(frame)
    if library == "polars":
        from ubunye_rows.hashing.frames import polars_to_arrow

        return arrow_fingerprint_or_raise(polars_to_arrow(frame))
    if callable(getattr(frame, "collect", None)):
        from ubunye_rows.hashing.frames import port_rows

        rows, pairs = port_rows(frame)
        return fingerprint_rows(rows, pairs)
    raise TypeError(
        f"cannot hash a {type(frame).__name__}: expected a pandas, Arrow, polars or Spark frame, "
        "or an object with collect() and a schema"
    )


def fingerprint(frame: Any, *, time_zone: str | None = None) -> Fingerprint:
    """The rows-v1 fingerprint of a frame; never raises for what is in the frame.

    ``time_zone`` is the zone a naive pandas datetime is wall time in (UTC when None).
    When the rows cannot be read, ``data_hash`` and ``row_count`` are None and ``error``
    says ``"<Type>: <message>"``.
    """
    try:
        return _fingerprint_or_raise(frame, time_zone)
    except Exception as exc:  # hashing only reports on a run; its failure is recorded, not raised
        return failed_fingerprint(frame, exc)
