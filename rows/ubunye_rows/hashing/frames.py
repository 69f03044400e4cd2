"""Frames of each library made ready for the Arrow path, as rows-v1 prepares them.

pandas is prepared exactly as the reference prepares it (named index kept, naive
datetimes read as wall time in a zone, microseconds); polars and Arrow are taken as
they are; a "port" offers ``collect()`` and a schema of canonical names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ubunye_rows.hashing.types import refuse_duplicate_names

if TYPE_CHECKING:
    import pyarrow as pa

#: The zone a naive pandas datetime is read in when the caller names none.
DEFAULT_TIME_ZONE = "UTC"
#: Below this many cells (rows times columns) a pandas frame converts on the calling thread:
#: pyarrow would start a thread pool for each conversion, which costs more than it gains there.
ONE_THREAD_CELLS = 1_000_000


def arrow_from_pandas(frame: Any, preserve_index: bool | None) -> pa.Table:
    """``pa.Table.from_pandas(frame, preserve_index=...)``: the same table, converted on the
    calling thread when the frame is small (``ONE_THREAD_CELLS``)."""
    import pyarrow as pa

    small = len(frame) * max(1, len(frame.columns)) < ONE_THREAD_CELLS
    return pa.Table.from_pandas(frame, preserve_index=preserve_index, nthreads=1 if small else None)


def no_column_table(rows: int) -> pa.Table:
    """A column-less Arrow table that still has ``rows`` rows (``pa.table({})`` cannot say so)."""
    import pyarrow as pa

    empty = pa.array([{}] * rows, pa.struct([]))
    return pa.Table.from_batches([pa.RecordBatch.from_struct_array(empty)])


def wall_time_to_instant(col: pa.Array | pa.ChunkedArray, zone: str) -> Any:
    """Naive timestamps read as wall time in ``zone``, as instants (Java's ``ZonedDateTime.of``).

    A wall time in a daylight-saving gap is moved later by the gap (it keeps the offset
    before the change); a wall time that happens twice takes the earlier instant.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    unit = col.type.unit
    if zone in ("UTC", "Etc/UTC", "Z"):
        return col.cast(pa.timestamp(unit, tz=zone))
    if unit != "s":
        # pyarrow looks up the offset of a pre-1970 time with a fraction from the next whole
        # second, which can fall on the other side of a change: decide on whole seconds only.
        whole = pc.floor_temporal(col, unit="second")
        if not pc.all(pc.fill_null(pc.equal(col, whole), True)).as_py():
            return pc.add(wall_time_to_instant(whole, zone), pc.subtract(col, whole))
    try:
        return pc.assume_timezone(col, timezone=zone)
    except pa.ArrowInvalid:
        pass  # some wall time is in a gap or a fold
    earlier = pc.assume_timezone(col, timezone=zone, ambiguous="earliest", nonexistent="earliest")
    after = pc.assume_timezone(col, timezone=zone, ambiguous="earliest", nonexistent="latest")
    in_gap = pc.not_equal(earlier, after)
    # The offset before the change, read a minute before it (changes are minutes apart at
    # least, and pyarrow misreads the offset of the very last instant before some changes).
    minute = pa.scalar(60, pa.duration("s")).cast(pa.duration(unit))
    probe = pc.subtract(after, minute)
    offset = pc.subtract(pc.local_timestamp(probe), probe.cast(pa.timestamp(unit)))
    shifted = pc.subtract(col, offset).cast(pa.timestamp(unit, tz=zone))
    return pc.if_else(in_gap, shifted, earlier)


def pandas_to_arrow(frame: Any, time_zone: str | None = None) -> pa.Table:
    """A pandas DataFrame as the Arrow table rows-v1 hashes (the reference's preparation).

    A named index becomes columns, an unnamed one is dropped; duplicate column names are
    refused; a category becomes its values' type; null and large_string columns become
    string; a naive datetime is wall time in ``time_zone`` (UTC by default) and becomes a
    UTC instant; every timestamp is cut to microseconds.
    """
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"expected a pandas DataFrame, not {type(frame).__name__}")
    zone = time_zone or DEFAULT_TIME_ZONE
    refuse_duplicate_names(frame.columns)
    if any(name is not None for name in frame.index.names):
        frame = frame.reset_index()
    if len(frame.columns) == 0:
        return no_column_table(len(frame))
    return pandas_columns_as_spark_types(arrow_from_pandas(frame, preserve_index=False), zone)


def pandas_columns_as_spark_types(table: pa.Table, zone: str) -> pa.Table:
    """``table`` (converted from pandas) with every column in the type Spark would hold for it."""
    import pyarrow as pa

    if table.num_columns == 0:
        return table  # rebuilt from no columns it would lose its rows
    columns = [_spark_typed_column(column, zone) for column in table.columns]
    fields = [f.with_type(c.type) for f, c in zip(table.schema, columns, strict=True)]
    return pa.table(columns, schema=pa.schema(fields))


def _spark_typed_column(column: pa.ChunkedArray, zone: str) -> pa.ChunkedArray:
    """A category as its values, null and large or view text as string, and any timestamp as
    UTC microseconds (a naive one read as wall time in ``zone``)."""
    import pyarrow as pa

    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    kind = column.type
    if pa.types.is_null(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return column.cast(pa.string())
    if not pa.types.is_timestamp(kind):
        return column
    instants = column if kind.tz is not None else wall_time_to_instant(column, zone)
    # Spark keeps whole microseconds, so anything finer is dropped here as on the reference.
    return instants.cast(pa.timestamp("us", tz="UTC"), safe=False)


def polars_to_arrow(frame: Any) -> pa.Table:
    """A polars DataFrame (or LazyFrame, collected) as an Arrow table, values unchanged.

    polars hands out large, view and dictionary types; their canonical names are the
    plain ones (``string``, ``list<...>``, a category's value type), so nothing is cast.
    """
    if hasattr(frame, "collect") and not hasattr(frame, "to_arrow"):
        frame = frame.collect()
    return frame.to_arrow()


def port_rows(frame: Any) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """A port's rows (from ``collect()``) as dicts, and its schema as ``(name, type)`` pairs."""
    rows = [
        row.asDict(recursive=True) if hasattr(row, "asDict") else dict(row)
        for row in frame.collect()
    ]
    schema = getattr(frame, "schema", None)
    if schema is None:
        raise TypeError(f"{type(frame).__name__} offers collect() but no schema")
    pairs = [(str(name), str(kind)) for name, kind in dict(schema).items()]
    return rows, pairs
