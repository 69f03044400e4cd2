"""Infinite dates and times, which rows-v1 has no text for: an honest error naming the column and
the value, on every path (Arrow here; SQL in ``ubunye_rows.sql``).

In Arrow an infinity is a sentinel at the end of the storage type: DuckDB exports ``infinity``
and ``-infinity`` as the largest and the negated largest value of a date32 or a timestamp, and
ADBC's PostgreSQL driver as the smallest value shifted from PostgreSQL's epoch (2000) to Arrow's
(1970), ``infinity`` wrapping round to one below it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

#: Days and microseconds from 1970-01-01 to 2000-01-01, PostgreSQL's epoch.
_POSTGRES_EPOCH_DAYS = 10_957
_POSTGRES_EPOCH_US = 946_684_800_000_000


def _sentinels(largest: int, postgres_epoch: int) -> dict[int, str]:
    """The stored values that stand for an infinity in a type whose largest value is
    ``largest``: DuckDB's (the largest, its negation), the smallest, and ADBC's PostgreSQL
    driver's (the smallest shifted by the epochs' distance, ``infinity`` wrapped one below)."""
    smallest = -largest - 1
    return {
        largest: "infinity",
        -largest: "-infinity",
        smallest: "-infinity",
        smallest + postgres_epoch: "-infinity",
        smallest - 1 + postgres_epoch: "infinity",
    }


#: A date32 day number, or a 64-bit timestamp value, that stands for an infinity, and which one.
DATE32_INFINITIES = _sentinels(2**31 - 1, _POSTGRES_EPOCH_DAYS)
TIMESTAMP_INFINITIES = _sentinels(2**63 - 1, _POSTGRES_EPOCH_US)


#: What an infinite date or time is called in the error, and a decimal that is not a number.
INFINITE_TIME = "an infinite date or time"
NOT_A_NUMBER = "a decimal that is not a number"


class InfiniteValueError(ValueError):
    """A column holds a value rows-v1 has no text for: an infinite date or time (or, in
    PostgreSQL, a numeric NaN or infinity)."""

    def __init__(self, column: str, value: str, kind: str = INFINITE_TIME):
        self.column, self.value = column, value
        super().__init__(f"the column {column!r} holds {value}: rows-v1 has no text for {kind}")


def _temporal_leaves(array: pa.Array) -> Iterator[pa.Array]:
    """The date32 and timestamp arrays inside ``array``: itself, or its nested values."""
    import pyarrow as pa

    t = array.type
    if not holds_times(t):
        return
    if pa.types.is_date32(t) or pa.types.is_timestamp(t):
        yield array
    elif isinstance(array, pa.MapArray):  # a map is a list too: asked first
        yield from _temporal_leaves(array.keys)
        yield from _temporal_leaves(array.items)
    elif isinstance(array, pa.ListArray | pa.LargeListArray | pa.FixedSizeListArray):
        yield from _temporal_leaves(array.flatten())
    elif isinstance(array, pa.StructArray):
        for index in range(t.num_fields):
            yield from _temporal_leaves(array.field(index))


def _infinity_in(array: pa.Array) -> str | None:
    """``"infinity"`` or ``"-infinity"`` when the date32 or timestamp ``array`` holds one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    date = pa.types.is_date32(array.type)
    sentinels = DATE32_INFINITIES if date else TIMESTAMP_INFINITIES
    stored = array.view(pa.int32() if date else pa.int64())
    found = pc.filter(stored, pc.is_in(stored, pa.array(list(sentinels), stored.type)))
    return sentinels[found[0].as_py()] if len(found) else None


def refuse_infinite_values(name: str, array: pa.Array) -> None:
    """Raise InfiniteValueError when ``array`` (the column ``name``) holds an infinite date or
    time, at any depth."""
    for leaf in _temporal_leaves(array):
        value = _infinity_in(leaf)
        if value is not None:
            raise InfiniteValueError(name, value)


def refuse_infinite_times(table: pa.Table, names: Sequence[str]) -> None:
    """Raise InfiniteValueError when a column ``names`` of ``table`` holds an infinite date or
    time, at any depth."""
    for name in names:
        for chunk in table.column(name).chunks:
            refuse_infinite_values(name, chunk)


def holds_times(arrow_type: pa.DataType, nested: bool = False) -> bool:
    """Whether values of ``arrow_type`` are, or hold, dates or timestamps (only hold them,
    inside a list, map or struct, when ``nested``)."""
    import pyarrow as pa

    t = arrow_type
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return not nested
    if pa.types.is_map(t):
        return holds_times(t.key_type) or holds_times(t.item_type)
    if isinstance(t, pa.ListType | pa.LargeListType | pa.FixedSizeListType):
        return holds_times(t.value_type)
    return pa.types.is_struct(t) and any(holds_times(field.type) for field in t)
