"""The golden vectors as tables of a database: which ones each database can hold with the same
type names, and loading one (DuckDB through its Arrow import, PostgreSQL as typed literals over
any DB-API connection), so the vectors can be hashed where the rows are."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from ubunye_rows.sql.dialects import literal, quote_identifier

if TYPE_CHECKING:
    import pyarrow as pa

#: The golden vectors each database cannot hold with the same type names, and why.
NOT_HELD = {
    "duckdb": {"no_columns": "a DuckDB table has at least one column"},
    "postgresql": {
        "no_columns": "a table without columns has none for the catalog to name",
        "awkward_text": "PostgreSQL text cannot hold NUL (U+0000)",
        "integers": "PostgreSQL has no one-byte integer (int8 would be held as smallint)",
        "unsigned_and_large_types": "PostgreSQL has no unsigned integers",
        "maps": "PostgreSQL has no map type",
        "structs": "structs are composite types, which the hash does not read",
        "nested": "a list of structs holding a map",
        "map_keyed_by_decimal": "PostgreSQL has no map type",
        "struct_field_names_with_punctuation": "structs are composite types, not read by the hash",
    },
}

#: Microseconds per unit of an Arrow timestamp PostgreSQL can hold exactly.
MICROSECONDS = {"s": 1_000_000, "ms": 1_000, "us": 1}
MICROSECONDS_PER_DAY = 86_400_000_000


def held_vectors(kind: str) -> list[Any]:
    """The golden vectors (``GoldenVector``) database ``kind`` (``duckdb``, ``postgresql``)
    holds with the same type names."""
    from ubunye_rows.testing.golden import vectors_for

    return [vector for vector in vectors_for("arrow") if vector.name not in NOT_HELD[kind]]


def postgres_column_type(t: pa.DataType) -> str:
    """The PostgreSQL column type holding an Arrow type exactly; TypeError when there is none."""
    import pyarrow as pa

    scalars = {
        pa.int16(): "smallint",
        pa.int32(): "integer",
        pa.int64(): "bigint",
        pa.float32(): "real",
        pa.float64(): "double precision",
        pa.bool_(): "boolean",
        pa.string(): "text",
        pa.large_string(): "text",
        pa.binary(): "bytea",
        pa.date32(): "date",
    }
    if t in scalars:
        return scalars[t]
    if pa.types.is_decimal(t):
        return f"numeric({t.precision},{t.scale})"
    if pa.types.is_timestamp(t) and t.unit in MICROSECONDS:
        return "timestamptz" if t.tz else "timestamp"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return postgres_column_type(t.value_type) + "[]"
    raise TypeError(f"PostgreSQL has no column type holding {t} exactly")


def postgres_columns_sql(schema: pa.Schema) -> str:
    """A CREATE TABLE column list for ``schema``."""
    return ", ".join(f"{quote_identifier(f.name)} {postgres_column_type(f.type)}" for f in schema)


def _float_literal(value: float) -> str:
    # repr is the shortest text reading back as the double; PostgreSQL reads it (and a real
    # read from the double's text) by correct rounding, so the value is the one stored.
    if value != value:
        return "'NaN'"
    if value in (float("inf"), float("-inf")):
        return "'Infinity'" if value > 0 else "'-Infinity'"
    return literal(repr(value))


def _timestamp_literal(microseconds: int, zoned: bool) -> str:
    # Whole days and the microseconds into the day, each exact; the day's arithmetic on a
    # timestamp without zone (a zoned one would move with the session's zone's offsets).
    days, into_day = divmod(microseconds, MICROSECONDS_PER_DAY)
    wall = (
        f"(TIMESTAMP '1970-01-01 00:00:00' + make_interval(days => {days}) "
        f"+ INTERVAL '1 microsecond' * {into_day})"
    )
    return f"({wall} AT TIME ZONE 'UTC')" if zoned else wall


def _postgres_values(values: pa.Array) -> list[str]:
    """Each value of ``values`` as a PostgreSQL literal (NULL for a null), exactly."""
    import pyarrow as pa

    t = values.type
    valid = values.is_valid().to_pylist()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        items = _postgres_values(values.flatten())
        offsets = values.offsets.to_pylist()
        item_type = postgres_column_type(t.value_type)
        listed = [
            f"CAST(ARRAY[{', '.join(items[offsets[i] : offsets[i + 1]])}] AS {item_type}[])"
            for i in range(len(values))
        ]
        return [text if ok else "NULL" for text, ok in zip(listed, valid, strict=True)]
    if pa.types.is_timestamp(t):
        scale = MICROSECONDS[t.unit]
        raw = values.cast(pa.int64()).to_pylist()
        texts = [_timestamp_literal(v * scale, t.tz is not None) for v in raw if v is not None]
    elif pa.types.is_date32(t):
        texts = [
            f"(DATE '1970-01-01' + {v})"
            for v in values.cast(pa.int32()).to_pylist()
            if v is not None
        ]
    elif pa.types.is_floating(t):
        texts = [_float_literal(v) for v in values.to_pylist() if v is not None]
    elif pa.types.is_binary(t):
        texts = [f"decode('{v.hex()}', 'hex')" for v in values.to_pylist() if v is not None]
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        texts = [_escaped_text(v) for v in values.to_pylist() if v is not None]
    elif pa.types.is_boolean(t):
        texts = ["TRUE" if v else "FALSE" for v in values.to_pylist() if v is not None]
    else:  # integers and decimals: their text is their PostgreSQL literal
        texts = [literal(str(v)) for v in values.to_pylist() if v is not None]
    found = iter(texts)
    return [f"CAST({next(found)} AS {postgres_column_type(t)})" if ok else "NULL" for ok in valid]


def _escaped_text(value: str) -> str:
    """A text as an escape string literal, read the same whatever standard_conforming_strings."""
    if "\x00" in value:
        raise TypeError("PostgreSQL text cannot hold NUL (U+0000)")
    return "E'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def postgres_table_statements(table: pa.Table, name: str, *, temporary: bool) -> list[str]:
    """The statements creating table ``name`` holding ``table``'s rows and types exactly;
    TypeError for a type or value PostgreSQL cannot hold as it is."""
    if not table.num_columns:
        raise TypeError("a table without columns has none for PostgreSQL's catalog to name")
    kind = "TEMPORARY TABLE" if temporary else "TABLE"
    statements = [f"CREATE {kind} {quote_identifier(name)} ({postgres_columns_sql(table.schema)})"]
    if table.num_rows:
        columns = [_postgres_values(column.combine_chunks()) for column in table.columns]
        rows = ", ".join(f"({', '.join(row)})" for row in zip(*columns, strict=True))
        statements.append(f"INSERT INTO {quote_identifier(name)} VALUES {rows}")
    return statements


def load_golden_table(
    connection: Any, kind: str, table: pa.Table, name: str, *, temporary: bool = True
) -> None:
    """``table`` as table ``name`` of the database behind ``connection`` (``kind``: ``duckdb``
    or ``postgresql``), a temporary one unless ``temporary`` is False. PostgreSQL's statements
    run on a cursor of ``connection``; committing is the caller's."""
    if kind == "duckdb":
        view = f"ubunye_rows_arrow_{base64.b32encode(name.encode()).decode().rstrip('=')}"
        connection.register(view, table)
        try:
            kind_sql = "TEMP TABLE" if temporary else "TABLE"
            connection.execute(
                f"CREATE {kind_sql} {quote_identifier(name)} AS SELECT * FROM {view}"
            )
        finally:
            connection.unregister(view)
        return
    cursor = connection.cursor()
    try:
        for statement in postgres_table_statements(table, name, temporary=temporary):
            cursor.execute(statement)
    finally:
        cursor.close()
