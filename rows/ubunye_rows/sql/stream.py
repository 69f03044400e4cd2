"""rows-v1 of any database's relation, streamed: the rows come as Arrow record batches through
the driver's own Arrow fetch and every line is written and hashed by the kernel, one batch at a
time, so memory stays at a batch whatever the table's size."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ubunye_rows.hashing.digest import STREAMED, Fingerprint
from ubunye_rows.hashing.sketch import empty_bucket_arrays
from ubunye_rows.hashing.types import UnsupportedTypeError, canonical_type, refuse_duplicate_names
from ubunye_rows.sql.query import Column, Segment, column_pairs
from ubunye_rows.sql.relations import Relation, relation_sql
from ubunye_rows.sql.totals import add_batch_buckets, fingerprint_of_sketch_arrays

if TYPE_CHECKING:
    import pyarrow as pa

#: Rows per Arrow batch asked of drivers that take a batch size.
BATCH_ROWS = 1 << 16
#: Rows per Arrow batch of a DuckDB result.
DUCKDB_BATCH_ROWS = 1 << 17


def duckdb_batches(connection: Any, query: str) -> pa.RecordBatchReader:
    """``query``'s result on a duckdb connection as Arrow batches of ``DUCKDB_BATCH_ROWS`` rows
    (its relation streams; a cursor's result would be copied)."""
    relation = connection.sql(query)
    reader = getattr(relation, "to_arrow_reader", None) or relation.fetch_arrow_reader
    return reader(DUCKDB_BATCH_ROWS)


def arrow_reader(
    cursor: Any, query: str, columns: Sequence[Column] | None = None
) -> pa.RecordBatchReader:
    """The result of ``query`` on a DB-API cursor as Arrow batches, through the driver's own
    Arrow fetch (ADBC's ``fetch_record_batch``, Snowflake's ``fetch_arrow_batches``, Databricks'
    ``fetchmany_arrow``), else its rows fetched ``BATCH_ROWS`` at a time and typed by
    ``columns``; a TypeError naming the cursor when it has no Arrow fetch and no columns are
    given."""
    cursor.execute(query)
    if hasattr(cursor, "fetch_record_batch"):
        try:
            return cursor.fetch_record_batch(BATCH_ROWS)
        except TypeError:  # ADBC's takes no batch size: the driver chooses it
            return cursor.fetch_record_batch()
    if hasattr(cursor, "fetch_arrow_batches"):
        return _reader_of_tables(cursor.fetch_arrow_batches(), columns)
    if hasattr(cursor, "fetchmany_arrow"):
        return _reader_of_tables(iter(lambda: cursor.fetchmany_arrow(BATCH_ROWS), None), columns)
    if columns is None:
        raise TypeError(
            f"{type(cursor).__name__} has no Arrow fetch (fetch_record_batch, fetch_arrow_batches "
            "or fetchmany_arrow): give the relation's columns (name, Arrow type) to type its rows"
        )
    return _reader_of_rows(cursor, columns)


def _reader_of_tables(tables: Iterable[Any], columns: Sequence[Column] | None) -> Any:
    """Arrow tables a driver fetches (until an empty or None one) as one batch reader."""
    import pyarrow as pa

    def batches() -> Iterator[pa.RecordBatch]:
        for table in tables:
            if table is None or table.num_rows == 0:
                return
            yield from table.to_batches()

    stream = batches()
    first = next(stream, None)
    if first is None:
        schema = pa.schema(list(columns)) if columns is not None else pa.schema([])
        return pa.RecordBatchReader.from_batches(schema, iter(()))
    return pa.RecordBatchReader.from_batches(first.schema, _chained(first, stream))


def _chained(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


def _reader_of_rows(cursor: Any, columns: Sequence[Column]) -> Any:
    """A plain DB-API cursor's rows, ``BATCH_ROWS`` at a time, as batches typed by ``columns``."""
    import pyarrow as pa

    schema = pa.schema(list(columns))

    def batches() -> Iterator[pa.RecordBatch]:
        while rows := cursor.fetchmany(BATCH_ROWS):
            yield pa.RecordBatch.from_arrays(
                [pa.array(values, type=kind) for values, (_, kind) in _by_column(rows, columns)],
                schema=schema,
            )

    return pa.RecordBatchReader.from_batches(schema, batches())


def _by_column(rows: Sequence[Sequence[Any]], columns: Sequence[Column]) -> Iterator[Any]:
    """Each column's values across ``rows`` (a row of another width is a ValueError)."""
    for row in rows:
        if len(row) != len(columns):
            raise ValueError(f"a row has {len(row)} values where {len(columns)} columns are typed")
    return zip(zip(*rows, strict=True), columns, strict=True) if rows else iter(())


def fingerprint_of_batches(batches: Iterable[pa.RecordBatch], schema: pa.Schema) -> Fingerprint:
    """rows-v1 of the rows in ``batches`` (each of ``schema``), one batch in memory at a time.

    Raises UnsupportedTypeError naming the first column rows-v1 has no type for, and its type.
    """
    refuse_duplicate_names(schema.names)
    for field in schema:
        try:
            canonical_type(field.type)
        except UnsupportedTypeError as error:
            raise UnsupportedTypeError(
                f"column {field.name!r} of type {field.type} cannot be hashed by rows-v1: {error}"
            ) from error
    columns = [(field.name, field.type) for field in schema]
    found = [Segment(column=column) for column in sorted(columns, key=lambda c: c[0])]
    order = [name for name, _ in sorted(columns, key=lambda c: c[0])]
    totals = empty_bucket_arrays()
    for batch in batches:
        if batch.num_rows:
            add_batch_buckets(totals, batch.select(order), found)
    return fingerprint_of_sketch_arrays(column_pairs(columns), totals)


def typed_batches(
    batches: Iterable[pa.RecordBatch], columns: Sequence[Column]
) -> Iterator[pa.RecordBatch]:
    """Each batch with its columns cast to the types ``columns`` plan (a driver's own wrapping
    of a type, e.g. PostgreSQL numeric as opaque text, read as the decimal it is)."""
    import pyarrow as pa

    names = [name for name, _ in columns]
    for batch in batches:
        arrays = []
        for (_, planned), values in zip(columns, batch.select(names).columns, strict=True):
            if isinstance(values.type, pa.ExtensionType):
                values = values.storage
            arrays.append(values if values.type == planned else values.cast(planned))
        yield pa.RecordBatch.from_arrays(arrays, names=names)


def fingerprint_streamed(
    connection: Any,
    relation: Relation | None = None,
    *,
    query: str | None = None,
    columns: Sequence[Column] | None = None,
) -> Fingerprint:
    """rows-v1 of ``relation`` (a table's name or dotted parts) or of ``query``'s result, read
    from a connection (DuckDB, or any DB-API one: see :func:`arrow_reader`) as Arrow batches
    and hashed by the kernel; ``columns`` (name, Arrow type) type the batches where the
    driver's own types are not the columns' (PostgreSQL numeric through ADBC), and type the
    rows of a driver without an Arrow fetch."""
    if (relation is None) == (query is None):
        raise ValueError("give a relation or a query, not both and not neither")
    sql = query if query is not None else f"SELECT * FROM {relation_sql(relation)}"
    if hasattr(connection, "sql"):  # DuckDB
        return _fingerprint_of_reader(duckdb_batches(connection, sql), columns)
    cursor = connection.cursor()
    try:
        return _fingerprint_of_reader(arrow_reader(cursor, sql, columns), columns)
    finally:
        cursor.close()


def _fingerprint_of_reader(
    reader: pa.RecordBatchReader, columns: Sequence[Column] | None
) -> Fingerprint:
    import pyarrow as pa

    if columns is None:
        found = fingerprint_of_batches(reader, reader.schema)
    else:
        found = fingerprint_of_batches(typed_batches(reader, columns), pa.schema(list(columns)))
    return replace(found, hashed_in=STREAMED)
