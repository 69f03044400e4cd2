"""The queries: one aggregation that returns a table's rows-v1 buckets, and, where some columns
are written by the kernel instead, the select that streams the others' text beside them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ubunye_rows.sql.dialects import Dialect, quote_identifier
from ubunye_rows.sql.texts import members_text

if TYPE_CHECKING:
    import pyarrow as pa

#: One column of the table: its name and the Arrow type it is written as.
Column = tuple[str, "pa.DataType"]


def column_pairs(columns: Sequence[Column]) -> list[tuple[str, str]]:
    """The columns' ``(name, canonical type)`` pairs, the schema the hash covers."""
    from ubunye_rows.hashing.types import canonical_type

    return [(name, canonical_type(t)) for name, t in columns]


def line_text(dialect: Dialect, columns: Sequence[Column]) -> str:
    """SQL writing each row's canonical line (columns in name order, nulls left out)."""
    ordered = sorted(columns, key=lambda column: column[0])
    return f"'{{' || {members_text(dialect, ordered)} || '}}'"


def source(relation: str, where: str | None) -> str:
    """The rows hashed: ``relation``, or its slice where ``where`` holds."""
    return f"{relation} WHERE {where}" if where else relation


def buckets_query(dialect: Dialect, columns: Sequence[Column], rows: str) -> str:
    """One aggregation returning ``(bucket, rows, sum of lane A, sum of lane B)`` per bucket
    (the first byte of the lines' SHA-256) of the rows of ``rows`` (a FROM clause)."""
    digest, lane_a, lane_b = dialect.lanes(line_text(dialect, columns))
    bucket = dialect.bucket_of("lane_a")
    fence = dialect.fence
    return (
        f"SELECT {bucket} AS bucket, count(*) AS rows, sum(lane_a) AS lane_a, "
        f"sum(lane_b) AS lane_b FROM ("
        f"SELECT {lane_a} AS lane_a, {lane_b} AS lane_b FROM ("
        f"SELECT {digest} AS digest FROM {rows}{fence}) AS digests{fence}) AS lanes GROUP BY 1"
    )


@dataclass(frozen=True)
class Segment:
    """One column of the streamed select: a run of columns the database writes (``text`` of
    their members, NULL when all are null) or one column the kernel writes (``column``)."""

    text: str | None = None
    column: Column | None = None


def segments(dialect: Dialect, columns: Sequence[Column], by_kernel: set[str]) -> list[Segment]:
    """The line's columns in name order, runs the database writes joined into one segment."""
    ordered = sorted(columns, key=lambda column: column[0])
    found: list[Segment] = []
    run: list[Column] = []
    for column in ordered:
        if column[0] in by_kernel:
            if run:
                found.append(Segment(text=f"NULLIF({members_text(dialect, run)}, '')"))
                run = []
            found.append(Segment(column=column))
        else:
            run.append(column)
    if run:
        found.append(Segment(text=f"NULLIF({members_text(dialect, run)}, '')"))
    return found


def segments_query(dialect: Dialect, found: Sequence[Segment], rows: str) -> str:
    """The select streaming each segment: database text, or a column's own values."""
    selected = [
        segment.text
        if segment.text is not None
        else dialect.streamed(quote_identifier(segment.column[0]), segment.column[1])
        for segment in found
    ]
    named = ", ".join(f"{expression} AS segment_{i}" for i, expression in enumerate(selected))
    return f"SELECT {named} FROM {rows}"
