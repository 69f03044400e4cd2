"""Naming the rows to hash: a relation given as SQL text or as identifier parts."""

from __future__ import annotations

from collections.abc import Sequence

from ubunye_rows.sql.dialects import quote_identifier

#: A relation: SQL text used as it is (``"db"."main"."orders"``, ``shop.orders``), or its
#: identifier parts (``("shop", "orders")``), quoted here.
Relation = str | Sequence[str]


def relation_sql(relation: Relation) -> str:
    """The relation as SQL; a ValueError for an empty name or part."""
    if isinstance(relation, str):
        if not relation.strip():
            raise ValueError("rows-v1 in SQL needs a relation to hash, got an empty name")
        return relation
    parts = list(relation)
    if not parts or any(not isinstance(part, str) or not part for part in parts):
        raise ValueError(f"a relation's identifier parts must be non-empty texts, got {parts!r}")
    return ".".join(quote_identifier(part) for part in parts)


#: Columns streamed to the kernel instead of written in SQL: names, or ``"all"``.
KernelColumns = tuple[str, ...] | str


def chosen_kernel_columns(
    kernel_columns: KernelColumns, names: Sequence[str], relation: str
) -> set[str]:
    """The names ``kernel_columns`` picks among a relation's ``names`` (``"all"``: every one); a
    ValueError naming any the relation lacks."""
    if kernel_columns == "all":
        return set(names)
    if isinstance(kernel_columns, str):
        raise ValueError(
            f'kernel_columns is a tuple of column names or "all", not {kernel_columns!r}'
        )
    unknown = set(kernel_columns) - set(names)
    if unknown:
        raise ValueError(f"kernel_columns names columns {sorted(unknown)} that {relation} lacks")
    return set(kernel_columns)
