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
