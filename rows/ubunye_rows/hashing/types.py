"""Arrow types by their rows-v1 names (ADR 006): one table, the same names on every engine."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa


class UnsupportedTypeError(TypeError):
    """A column type rows-v1 has no canonical name (and so no canonical text) for."""


class Kind(str):
    """The rows-v1 name of a nested type (the text the schema hash holds) that also carries the
    names of its parts as the Arrow type has them: a list's item, a map's key and value, a
    struct's fields. Its text alone cannot always say them (``decimal(10,4)`` holds a comma, a
    field name may hold ``,``, ``:`` or ``<``); the writers read these, never the split text."""

    item: str | None = None
    key: str | None = None
    value: str | None = None
    fields: dict[str, str] | None = None

    @classmethod
    def of_list(cls, item: str) -> Kind:
        kind = cls(f"list<{item}>")
        kind.item = item
        return kind

    @classmethod
    def of_map(cls, key: str, value: str) -> Kind:
        kind = cls(f"map<{key},{value}>")
        kind.key, kind.value = key, value
        return kind

    @classmethod
    def of_struct(cls, fields: list[tuple[str, str]]) -> Kind:
        kind = cls("struct<" + ",".join(f"{name}:{child}" for name, child in fields) + ">")
        # A repeated field name keeps its last kind, as a row's dict keeps its last value.
        kind.fields = dict(fields)
        return kind


def refuse_duplicate_names(names: Iterable[Any]) -> None:
    """A ValueError naming every column name given more than once: rows-v1 orders a row's
    members by column name, so each name must be unique (on every engine)."""
    seen: set[Any] = set()
    duplicated = {name for name in names if name in seen or seen.add(name)}
    if duplicated:
        listed = sorted(str(name) for name in duplicated)
        raise ValueError(f"rows-v1 needs unique column names; duplicated: {listed}")


def _scalar_names() -> list[tuple[object, str]]:
    """(predicate, name) for every leaf type rows-v1 names; the first predicate that holds wins."""
    import pyarrow as pa

    t = pa.types
    return [
        (t.is_int8, "int8"),
        (t.is_int16, "int16"),
        (t.is_int32, "int32"),
        (t.is_int64, "int64"),
        # Unsigned integers are not in the ADR table; the reference names them as Arrow
        # does and writes their decimal text, so we do the same to keep agreement.
        (t.is_uint8, "uint8"),
        (t.is_uint16, "uint16"),
        (t.is_uint32, "uint32"),
        (t.is_uint64, "uint64"),
        # A half float reads back exactly as a float32, which is what it is named.
        (t.is_float16, "float32"),
        (t.is_float32, "float32"),
        (t.is_float64, "float64"),
        (t.is_boolean, "bool"),
        (t.is_string, "string"),
        (t.is_large_string, "string"),
        (t.is_string_view, "string"),
        (t.is_binary, "binary"),
        (t.is_large_binary, "binary"),
        (t.is_binary_view, "binary"),
        (t.is_date32, "date"),
        (t.is_date64, "date"),
        # A column of nulls only: every value is left out of the line.
        (t.is_null, "null"),
    ]


_SCALARS: list[tuple[object, str]] | None = None


def canonical_type(arrow_type: pa.DataType) -> str:
    """The rows-v1 name of an Arrow type; raises UnsupportedTypeError for a type it cannot name."""
    import pyarrow as pa

    global _SCALARS
    if _SCALARS is None:
        _SCALARS = _scalar_names()
    t = arrow_type
    if pa.types.is_dictionary(t):
        # A category is its values: the same data as the decoded column.
        return canonical_type(t.value_type)
    for predicate, name in _SCALARS:
        if predicate(t):  # type: ignore[operator]
            return name
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz else "timestamp_ntz"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_map(t):
        return Kind.of_map(canonical_type(t.key_type), canonical_type(t.item_type))
    if _is_any_list(t):
        return Kind.of_list(canonical_type(t.value_type))
    if pa.types.is_struct(t):
        return Kind.of_struct([(f.name, canonical_type(f.type)) for f in t])
    raise UnsupportedTypeError(f"rows-v1 has no canonical name for the Arrow type {t}")


def _is_any_list(t: pa.DataType) -> bool:
    """True for every Arrow list layout (plain, large, fixed size, view); rows-v1 names and writes
    them all as one ``list``."""
    import pyarrow as pa

    layouts = (pa.ListType, pa.LargeListType, pa.FixedSizeListType)
    views = (pa.ListViewType, pa.LargeListViewType)
    return isinstance(t, layouts + views)


def plain_type(arrow_type: pa.DataType) -> pa.DataType:
    """The same type with large, view, fixed-size and dictionary forms replaced by the plain ones.

    Casting a column to it keeps every value and its canonical name; the vectorised path
    then only meets 32-bit offsets and decoded values.
    """
    import pyarrow as pa

    t = arrow_type
    if pa.types.is_dictionary(t):
        return plain_type(t.value_type)
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(plain_type(t.key_type)),
            t.item_field.with_type(plain_type(t.item_type)),
        )
    if _is_any_list(t):
        return pa.list_(t.value_field.with_type(plain_type(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(plain_type(f.type)) for f in t])
    return t


def schema_pairs(schema: pa.Schema) -> list[tuple[str, str]]:
    """``(column name, canonical type)`` for each field of an Arrow schema, in schema order."""
    return [(field.name, canonical_type(field.type)) for field in schema]
