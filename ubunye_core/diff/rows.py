"""Which rows changed between two tables: hash every row, compare only the differing buckets.

Every row of both tables is hashed (its canonical line's SHA-256, as rows-v1 does). Only rows in
buckets whose sketches differ can have changed, so only those rows are compared as a multiset
(a duplicated row counts as often as it occurs) and only the rows that differ are turned back
into values. With a key, a removed and an added row with the same key values are one row
changed, and the columns whose values differ are named.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ubunye_rows.hashing.arrow_lines import slice_lines
from ubunye_rows.hashing.fingerprint import arrow_schema_pairs
from ubunye_rows.hashing.lanes import line_digests
from ubunye_rows.hashing.sketch import Sketch, add_digest_buckets, empty_bucket_arrays
from ubunye_rows.hashing.table_lanes import table_digests

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa


@dataclass(frozen=True)
class ChangedRow:
    """One key whose row differs: the key values, the columns that differ, both rows."""

    key: dict[str, Any]
    columns: list[str]
    before: dict[str, Any]
    after: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RowDiff:
    """The rows of ``before`` not in ``after`` (removed), the reverse (added), and with a key
    the rows changed; values are written as rows-v1 writes them (nulls as None)."""

    rows_before: int
    rows_after: int
    buckets: list[int]
    compared_before: int
    compared_after: int
    removed: list[dict[str, Any]] = field(default_factory=list)
    added: list[dict[str, Any]] = field(default_factory=list)
    changed: list[ChangedRow] = field(default_factory=list)
    key: list[str] | None = None
    #: The sketches of both tables, as their rows hash now (when the buckets came from them).
    sketches: tuple[Sketch, Sketch] | None = None

    @property
    def equal(self) -> bool:
        """True when both tables hold the same rows, as many times each."""
        return not (self.removed or self.added or self.changed)

    def to_dict(self, limit: int | None = None) -> dict[str, Any]:
        """A JSON document: counts, and at most ``limit`` rows of each kind (all when None)."""
        return {
            "equal": self.equal,
            "rows": {"before": self.rows_before, "after": self.rows_after},
            "buckets_differing": len(self.buckets),
            "rows_compared": {"before": self.compared_before, "after": self.compared_after},
            "key": self.key,
            "removed": len(self.removed),
            "added": len(self.added),
            "changed": len(self.changed),
            "sample": {
                "removed": self.removed[:limit],
                "added": self.added[:limit],
                "changed": [row.to_dict() for row in self.changed[:limit]],
            },
        }


def table_row_digests(table: pa.Table) -> np.ndarray:
    """Each row's SHA-256 (of its canonical line) as an (n, 32) uint8 array, in row order."""
    import numpy as np

    names = sorted(table.column_names)
    if not names:
        # No columns: rows-v1 writes every row as the same empty line.
        return np.tile(line_digests(_text(["{}"])), (table.num_rows, 1))
    kinds = dict(arrow_schema_pairs(table))
    return table_digests(table, names, [kinds[name] for name in names])


def sketch_of_digests(table: pa.Table, digests: np.ndarray) -> Sketch:
    """The sketch of a table from its row digests (the same one ``fingerprint`` keeps)."""
    pairs = arrow_schema_pairs(table)
    if not table.column_names:
        return Sketch.of_rows_only(pairs, table.num_rows)
    totals = empty_bucket_arrays()
    add_digest_buckets(totals, digests.reshape(-1), len(digests))
    return Sketch.from_arrays(pairs, totals)


def _checked_key(key: Sequence[str] | None, before: pa.Table, after: pa.Table) -> list[str] | None:
    """``key`` as a list (None when empty); a ValueError names key columns a table lacks."""
    key = list(key) if key else None
    for side, table in (("before", before), ("after", after)):
        missing = [name for name in key or () if name not in table.column_names]
        if missing:
            names = ", ".join(repr(name) for name in missing)
            which = f"key column {names} is" if len(missing) == 1 else f"key columns {names} are"
            columns = table.column_names
            shown = ", ".join(columns[:10]) + (", ..." if len(columns) > 10 else "")
            raise ValueError(f"{which} not in the {side} table (its columns: {shown})")
    return key


def diff_tables(
    before: pa.Table,
    after: pa.Table,
    *,
    key: Sequence[str] | None = None,
    buckets: Iterable[int] | None = None,
    digests: tuple[np.ndarray, np.ndarray] | None = None,
) -> RowDiff:
    """The rows removed, added (and with ``key``, changed) from ``before`` to ``after``.

    Both are Arrow tables as rows-v1 hashes them. ``buckets``: the differing buckets when the
    caller knows them from recorded sketches; otherwise they come from the rows' own sketches.
    ``digests``: both tables' :func:`table_row_digests`, when the caller has them already.
    """
    key = _checked_key(key, before, after)
    if digests is None:
        digests = table_row_digests(before), table_row_digests(after)
    digests_before, digests_after = digests
    sketches = None
    if buckets is None:
        sketches = (
            sketch_of_digests(before, digests_before),
            sketch_of_digests(after, digests_after),
        )
        buckets = sketches[0].differing_buckets(sketches[1])
    wanted = sorted(set(buckets))
    rows_b, rows_a = (
        _rows_in(before, digests_before, wanted),
        _rows_in(after, digests_after, wanted),
    )
    removed_at, added_at = _unmatched(digests_before, rows_b, digests_after, rows_a)
    removed = _row_values(before, removed_at)
    added = _row_values(after, added_at)
    diff = RowDiff(
        rows_before=before.num_rows,
        rows_after=after.num_rows,
        buckets=wanted,
        compared_before=len(rows_b),
        compared_after=len(rows_a),
        key=key,
        sketches=sketches,
    )
    if key:
        diff.removed, diff.added, diff.changed = _pair_by_key(removed, added, key)
    else:
        diff.removed, diff.added = removed, added
    return diff


def _text(values: list[str]) -> pa.Array:
    import pyarrow as pa

    return pa.array(values, pa.string())


def _rows_in(table: pa.Table, digests: np.ndarray, buckets: list[int]) -> np.ndarray:
    """Positions of the rows whose bucket (first digest byte) is one of ``buckets``."""
    import numpy as np

    if not table.column_names:
        return np.arange(table.num_rows)  # every row is in the one bucket rows-v1 gives them
    return np.flatnonzero(np.isin(digests[:, 0], np.array(buckets, dtype=np.uint8)))


def _unmatched(
    digests_b: np.ndarray, rows_b: np.ndarray, digests_a: np.ndarray, rows_a: np.ndarray
) -> tuple[list[int], list[int]]:
    """Positions of before-rows with no equal after-row, and the reverse, counting duplicates."""
    left = Counter(digests_b[i].tobytes() for i in rows_b)
    right = Counter(digests_a[i].tobytes() for i in rows_a)
    extra_b, extra_a = left - right, right - left
    return _take(digests_b, rows_b, extra_b), _take(digests_a, rows_a, extra_a)


def _take(digests: np.ndarray, rows: np.ndarray, extra: Counter) -> list[int]:
    """The first ``extra[d]`` positions holding each digest ``d``."""
    taken: list[int] = []
    for i in rows:
        digest = digests[i].tobytes()
        if extra.get(digest, 0) > 0:
            extra[digest] -= 1
            taken.append(int(i))
    return taken


def _row_values(table: pa.Table, positions: list[int]) -> list[dict[str, Any]]:
    """The rows at ``positions`` as rows-v1 writes their values, every column present."""
    if not positions:
        return []
    names = sorted(table.column_names)
    if not names:
        return [{} for _ in positions]
    kinds = dict(arrow_schema_pairs(table))
    picked = table.take(positions).select(names).combine_chunks().to_batches()
    lines = [line for batch in picked for line in slice_lines(batch, [kinds[n] for n in names])]
    order = table.column_names
    return [
        {name: parsed.get(name) for name in order}
        for parsed in (json.loads(line.as_py()) for line in lines)
    ]


def _pair_by_key(
    removed: list[dict[str, Any]], added: list[dict[str, Any]], key: list[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[ChangedRow]]:
    """Removed and added rows with the same key values become changed rows, in order."""
    waiting: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in added:
        waiting[_key_text(row, key)].append(row)
    changed: list[ChangedRow] = []
    still_removed: list[dict[str, Any]] = []
    for row in removed:
        matches = waiting.get(_key_text(row, key))
        if not matches:
            still_removed.append(row)
            continue
        other = matches.pop(0)
        columns = [name for name in _union(row, other) if row.get(name) != other.get(name)]
        changed.append(ChangedRow({name: row.get(name) for name in key}, columns, row, other))
    still_added = [row for rows in waiting.values() for row in rows]
    return still_removed, still_added, changed


def _key_text(row: dict[str, Any], key: list[str]) -> str:
    return json.dumps([row.get(name) for name in key], sort_keys=True)


def _union(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return [*a, *(name for name in b if name not in a)]
