"""The row diff finds exactly the rows that changed, comparing only the differing buckets."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sketch_tables import SCHEMA, row_key, rows, table_of

from ubunye_core.diff.rows import diff_tables
from ubunye_rows import fingerprint

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

edits = st.lists(
    st.one_of(
        st.tuples(st.just("delete"), st.integers(0, 10**6)),
        st.tuples(st.just("insert"), rows),
        st.tuples(st.just("duplicate"), st.integers(0, 10**6)),
        st.tuples(st.just("edit"), st.integers(0, 10**6), rows),
    ),
    max_size=8,
)


def edited(values: list[tuple], changes: list[tuple]) -> list[tuple]:
    out = list(values)
    for change in changes:
        if change[0] == "insert":
            out.insert(len(out) // 2, change[1])
        elif out and change[0] == "delete":
            out.pop(change[1] % len(out))
        elif out and change[0] == "duplicate":
            out.append(out[change[1] % len(out)])
        elif out and change[0] == "edit":
            out[change[1] % len(out)] = change[2]
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(rows, max_size=60), changes=edits, seed=st.randoms())
def test_the_diff_finds_exactly_the_rows_removed_and_added_as_a_multiset(values, changes, seed):
    after_values = edited(values, changes)
    seed.shuffle(after_values)  # row order never matters
    before, after = table_of(values), table_of(after_values)
    diff = diff_tables(before, after)
    expected_before = Counter(row_key(row) for row in values)
    expected_after = Counter(row_key(row) for row in after_values)
    assert Counter(row_key(row) for row in diff.removed) == expected_before - expected_after
    assert Counter(row_key(row) for row in diff.added) == expected_after - expected_before
    assert diff.equal == (fingerprint(before).data_hash == fingerprint(after).data_hash)


keyed_rows = st.lists(rows, max_size=40).map(
    lambda values: [(i, *row[1:]) for i, row in enumerate(values)]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=keyed_rows, changes=st.lists(st.tuples(st.integers(0, 10**6), rows), max_size=6),
       dropped=st.sets(st.integers(0, 60), max_size=4), new=st.lists(rows, max_size=3))  # fmt: skip
def test_with_a_key_the_diff_names_each_changed_row_and_its_columns(values, changes, dropped, new):
    after_rows = {row[0]: row for row in values}
    for position, row in changes:
        if values:
            key = values[position % len(values)][0]
            after_rows[key] = (key, *row[1:])
    for key in dropped:
        after_rows.pop(key, None)
    for offset, row in enumerate(new):
        after_rows[1000 + offset] = (1000 + offset, *row[1:])
    before_by_key = {row[0]: row_key(row) for row in values}
    after_by_key = {key: row_key(row) for key, row in after_rows.items()}
    diff = diff_tables(table_of(values), table_of(list(after_rows.values())), key=["id"])

    changed = {
        key: [
            f.name
            for f, a, b in zip(SCHEMA, before_by_key[key], after_by_key[key], strict=True)
            if a != b
        ]
        for key in before_by_key.keys() & after_by_key.keys()
        if before_by_key[key] != after_by_key[key]
    }
    assert {row.key["id"]: row.columns for row in diff.changed} == changed
    assert sorted(row["id"] for row in diff.removed) == sorted(
        before_by_key.keys() - after_by_key.keys()
    )
    assert sorted(row["id"] for row in diff.added) == sorted(
        after_by_key.keys() - before_by_key.keys()
    )


def test_only_the_rows_of_differing_buckets_are_compared():
    ids = list(range(50_000))
    before = pa.table({"id": ids, "v": [i * 2 for i in ids]})
    after = pa.table({"id": ids, "v": [i * 2 + (1 if i in (7, 4242) else 0) for i in ids]})
    diff = diff_tables(before, after, key=["id"])
    assert [row.key for row in diff.changed] == [{"id": 7}, {"id": 4242}]
    assert len(diff.buckets) <= 4
    assert diff.compared_before < 50_000 * 4 / 256 * 1.5


def test_a_key_column_missing_from_a_table_is_an_error_naming_it():
    with pytest.raises(ValueError, match="nope"):
        diff_tables(pa.table({"id": [1]}), pa.table({"id": [2]}), key=["nope"])
