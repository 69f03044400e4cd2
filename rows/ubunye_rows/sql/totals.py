"""From what a database returns to a rows-v1 fingerprint: the buckets an aggregation summed, or
the lines of a streamed select finished and hashed by the kernel."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ubunye_rows.hashing.digest import (
    IN_DATABASE,
    LANE_MASK,
    STREAMED,
    Fingerprint,
    data_hash,
    schema_hash,
)
from ubunye_rows.hashing.infinities import (
    InfiniteValueError,
    holds_times,
    refuse_infinite_values,
)
from ubunye_rows.hashing.lanes import bucket_line_lanes
from ubunye_rows.hashing.sketch import BUCKETS, Sketch, empty_bucket_arrays
from ubunye_rows.hashing.types import canonical_type
from ubunye_rows.sql.dialects import INFINITE_VALUE_OF, Dialect, quote_identifier
from ubunye_rows.sql.query import (
    Column,
    Segment,
    buckets_query,
    column_pairs,
    segments,
    segments_query,
)

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa


def fingerprint_in_database(
    dialect: Dialect,
    columns: Sequence[Column],
    by_kernel: set[str],
    rows: str,
    *,
    fetch_rows: Callable[[str], Iterable[Sequence[Any]]],
    stream_batches: Callable[[str], Iterable[pa.RecordBatch]],
) -> Fingerprint:
    """rows-v1 of ``rows`` (a FROM clause): one aggregation run by ``fetch_rows`` when the
    database writes every column, else the select of segments and ``by_kernel`` columns read
    as Arrow batches by ``stream_batches`` and finished here."""
    pairs = column_pairs(columns)
    try:
        if not by_kernel:
            found = fingerprint_of_buckets(pairs, fetch_rows(buckets_query(dialect, columns, rows)))
            return replace(found, hashed_in=IN_DATABASE)
        found = segments(dialect, columns, by_kernel)
        totals = empty_bucket_arrays()
        for batch in stream_batches(segments_query(dialect, found, rows)):
            add_batch_buckets(totals, batch, found)
    except Exception as error:
        refused = infinite_value_error(error, columns)
        if refused is None:
            raise
        raise refused from error
    return replace(fingerprint_of_sketch_arrays(pairs, totals), hashed_in=STREAMED)


def infinite_value_error(error: Exception, columns: Sequence[Column]) -> InfiniteValueError | None:
    """The database's refusal of an infinite date or time (``Dialect.finite_time``) as the
    error every path gives, naming the column; None for any other error."""
    found = re.search(re.escape(INFINITE_VALUE_OF) + r"(.+): (-?infinity)", str(error))
    if found is None:
        return None
    expression, value = found.groups()
    named = [name for name, _ in columns if quote_identifier(name) == expression]
    if not named:  # a value inside a list, struct or map: the columns that can hold it
        named = [name for name, arrow_type in columns if holds_times(arrow_type, nested=True)]
    return InfiniteValueError(" or ".join(named) or expression, value)


def fingerprint_of_buckets(
    pairs: Sequence[tuple[str, str]], rows: Iterable[Sequence[Any]]
) -> Fingerprint:
    """The fingerprint from ``(bucket, rows, sum A, sum B)`` rows (sums of any size, any sign:
    they are taken modulo 2**64); buckets that no row fell in may be missing."""
    counts, lane_a, lane_b = [0] * BUCKETS, [0] * BUCKETS, [0] * BUCKETS
    for bucket, count, sum_a, sum_b in rows:
        index = int(bucket)
        if not 0 <= index < BUCKETS:
            raise RuntimeError(f"the database returned bucket {bucket}, not one of 0..255")
        counts[index] = int(count)
        lane_a[index] = int(sum_a) & LANE_MASK
        lane_b[index] = int(sum_b) & LANE_MASK
    return fingerprint_of_sketch_arrays(pairs, [counts, lane_a, lane_b])


def fingerprint_of_sketch_arrays(pairs: Sequence[tuple[str, str]], totals: Any) -> Fingerprint:
    """The fingerprint of per-bucket counts and lane sums, with the table's schema pairs."""
    sketch = Sketch.from_arrays(pairs, totals)
    return Fingerprint(
        schema_hash=schema_hash(pairs),
        data_hash=data_hash(pairs, sketch.rows, sketch.lane_sums()),
        row_count=sketch.rows,
        sketch=sketch,
    )


def add_batch_buckets(totals: np.ndarray, batch: pa.RecordBatch, found: Sequence[Segment]) -> None:
    """Finish the lines of one streamed batch (the database's segments, the kernel's columns
    written between them) and add their buckets into ``totals`` (a (3, 256) uint64 array)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ubunye_rows.hashing.arrow_lines import value_texts
    from ubunye_rows.hashing.canonical import json_string

    if all(segment.column is not None for segment in found):
        totals += _kernel_buckets(batch, [segment.column for segment in found])
        return
    pieces = []
    for i, segment in enumerate(found):
        values = batch.column(i)
        if segment.column is None:
            pieces.append(values.cast(pa.string()))
            continue
        name, planned = segment.column
        if values.type != planned:
            values = values.cast(planned)  # e.g. a driver's numeric text as the decimal it is
        refuse_infinite_values(name, values)
        texts = value_texts(values, canonical_type(planned))
        pieces.append(pc.binary_join_element_wise(json_string(name) + ":", texts, ""))
    # Each present piece brings its comma; the first comma is then dropped (every piece starts
    # with a member's quoted name, never a comma). A row of nulls only has the line "{}".
    # (pyarrow's null_handling="skip" drops rows when it is given one array alone.)
    commas = [pc.fill_null(pc.binary_join_element_wise(",", piece, ""), "") for piece in pieces]
    inner = pc.utf8_ltrim(pc.binary_join_element_wise(*commas, ""), characters=",")
    lines = pc.binary_join_element_wise("{", inner, "}", "")
    totals += bucket_line_lanes(lines)


def _kernel_buckets(batch: pa.RecordBatch, columns: Sequence[tuple[str, pa.DataType]]) -> Any:
    """The buckets of a batch whose every column the kernel writes: the whole lines by it."""
    import pyarrow as pa

    from ubunye_rows.hashing.table_lanes import table_buckets

    arrays = [
        values if values.type == planned else values.cast(planned)
        for values, (_, planned) in zip(batch.columns, columns, strict=True)
    ]
    table = pa.Table.from_arrays(arrays, names=[name for name, _ in columns])
    names = sorted(table.column_names)
    kinds = {name: canonical_type(planned) for name, planned in columns}
    return table_buckets(table, names, [kinds[name] for name in names])
