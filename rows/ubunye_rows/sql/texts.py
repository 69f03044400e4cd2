"""rows-v1 value text as SQL, by Arrow type: what the kernel writes for a value, the database
writes for the same value (the differential tests hold the two to each other byte for byte).

A column's type is given as the Arrow type the database exports it as, so the schema, the names
in the hash and the text all come from one place (:func:`ubunye_rows.hashing.types.canonical_type`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ubunye_rows.hashing.canonical import json_string
from ubunye_rows.hashing.types import UnsupportedTypeError, canonical_type, plain_type
from ubunye_rows.sql.dialects import Dialect, DuckDBDialect, literal, quote_identifier

if TYPE_CHECKING:
    import pyarrow as pa


def written_in_sql(dialect: Dialect, arrow_type: pa.DataType) -> bool:
    """Whether ``dialect`` writes every value of the type exactly; a column of a type it does
    not is streamed to the kernel instead."""
    import pyarrow as pa

    t = arrow_type
    if pa.types.is_dictionary(t):
        return written_in_sql(dialect, t.value_type)
    if pa.types.is_floating(t) and t.bit_width < 64:
        return dialect.writes_float32
    if pa.types.is_timestamp(t):
        return t.unit != "ns"  # rows-v1 floors nanoseconds; a cast to microseconds rounds
    if pa.types.is_fixed_size_list(t):
        return False
    children = [t.field(i).type for i in range(t.num_fields)]
    return all(written_in_sql(dialect, child) for child in children)


def value_text(dialect: Dialect, expression: str, arrow_type: pa.DataType, depth: int = 0) -> str:
    """SQL writing the canonical JSON text of ``expression`` (NULL where the value is null)."""
    import pyarrow as pa

    t = plain_type(arrow_type)
    kinds = pa.types
    if kinds.is_integer(t):
        return dialect.integer_text(expression)
    if kinds.is_decimal(t):
        return _null_kept(expression, dialect.decimal_text(expression, t.scale))
    if kinds.is_floating(t):
        return _null_kept(expression, dialect.float_text(expression, t.bit_width))
    if kinds.is_boolean(t):
        return dialect.bool_text(expression)
    if kinds.is_string(t):
        return dialect.string_text(dialect.text(expression))
    if kinds.is_binary(t):
        return dialect.binary_text(expression)
    if kinds.is_date(t):
        return dialect.date_text(expression)
    if kinds.is_timestamp(t):
        return dialect.timestamp_text(expression, zoned=t.tz is not None)
    if kinds.is_null(t):
        return "CAST(NULL AS VARCHAR)"
    if kinds.is_list(t):
        return dialect.list_text(
            expression, lambda item: value_text(dialect, item, t.value_type, depth + 1), depth
        )
    if isinstance(dialect, DuckDBDialect) and kinds.is_struct(t):
        return _struct_text(dialect, expression, t, depth)
    if isinstance(dialect, DuckDBDialect) and kinds.is_map(t):
        return dialect.map_text(
            expression,
            lambda key: _map_key_text(dialect, key, t.key_type),
            lambda value: value_text(dialect, value, t.item_type, depth + 1),
            depth,
        )
    canonical_type(arrow_type)  # names the type rows-v1 has no name for, if that is why
    raise UnsupportedTypeError(f"rows-v1 has no SQL text for {arrow_type} in {dialect.name}")


def _null_kept(expression: str, text: str) -> str:
    """``text``, NULL where the value is null (a text built of defaults would not be)."""
    return f"CASE WHEN {expression} IS NULL THEN NULL ELSE {text} END"


def _struct_text(dialect: DuckDBDialect, expression: str, t: pa.StructType, depth: int) -> str:
    members = [
        member_text(dialect, f.name, dialect.struct_field(expression, f.name), f.type, depth + 1)
        for f in t
    ]
    joined = dialect.joined(members) if members else "''"
    return f"CASE WHEN {expression} IS NULL THEN NULL ELSE '{{' || {joined} || '}}' END"


def _map_key_text(dialect: Dialect, expression: str, key_type: pa.DataType) -> str:
    """A map key as its JSON member name: the text Spark's ``toString`` gives it, quoted."""
    import pyarrow as pa

    t = plain_type(key_type)
    if pa.types.is_string(t) or pa.types.is_date(t):
        return value_text(dialect, expression, t)  # already a JSON string
    if pa.types.is_integer(t) or pa.types.is_decimal(t) or pa.types.is_boolean(t):
        return f"'\"' || {value_text(dialect, expression, t)} || '\"'"
    if pa.types.is_floating(t):
        text = value_text(dialect, expression, t)
        return f"CASE WHEN {text} LIKE '\"%' THEN {text} ELSE '\"' || {text} || '\"' END"
    raise UnsupportedTypeError(f"rows-v1 cannot write a map key of type {key_type}")


def member_text(
    dialect: Dialect, name: str, expression: str, arrow_type: pa.DataType, depth: int = 0
) -> str:
    """SQL writing ``"name":<value>``, NULL where the value is null (the member is left out)."""
    head = literal(json_string(name) + ":")
    return f"{head} || {value_text(dialect, expression, arrow_type, depth)}"


def members_text(dialect: Dialect, columns: Sequence[tuple[str, pa.DataType]]) -> str:
    """SQL joining the members of ``columns`` (already in name order) with commas, nulls left
    out; '' when every value is null."""
    members = [member_text(dialect, name, quote_identifier(name), t) for name, t in columns]
    return dialect.joined(members)
