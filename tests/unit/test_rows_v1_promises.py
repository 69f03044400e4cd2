"""Each promise of ADR 006's rows-v1 hash, as its own test."""

from __future__ import annotations

import datetime as dt
import math
import os
import time

import pandas as pd
import pyarrow as pa
import pytest

from ubunye_rows import Fingerprint, fingerprint
from ubunye_rows.hashing import arrow_schema_pairs, fingerprint_rows
from ubunye_rows.hashing.digest import data_hash, schema_hash
from ubunye_rows.hashing.frames import arrow_from_pandas, no_column_table

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

UTC = dt.timezone.utc


def orders() -> pa.Table:
    return pa.table(
        {
            "id": pa.array([1, 2, 3, 4], pa.int64()),
            "name": ["Thabo", "Anna", None, "Sipho"],
            "amount": [10.5, math.nan, 0.0, None],
            "paid": [True, False, None, True],
            "at": pa.array(
                [dt.datetime(2024, 1, i + 1, tzinfo=UTC) for i in range(4)],
                pa.timestamp("us", tz="UTC"),
            ),
        }
    )


def digest(frame) -> str:
    fp = fingerprint(frame)
    assert fp.is_complete, fp.error
    return fp.data_hash


def test_every_row_counts() -> None:
    table = orders()
    whole = fingerprint(table)
    assert whole.row_count == 4
    for i in range(table.num_rows):
        without = pa.concat_tables([table.slice(0, i), table.slice(i + 1)])
        assert digest(without) != whole.data_hash, f"dropping row {i} went unseen"
    doubled = pa.concat_tables([table, table.slice(1, 1)])
    assert fingerprint(doubled).row_count == 5
    assert digest(doubled) != whole.data_hash


def test_row_order_does_not_change_the_digest() -> None:
    table = orders()
    reordered = table.take([3, 1, 0, 2])
    assert digest(reordered) == digest(table)
    frame = table.to_pandas()
    assert digest(frame.iloc[::-1]) == digest(frame)


def test_column_order_does_not_change_the_digest() -> None:
    table = orders()
    flipped = table.select(list(reversed(table.column_names)))
    assert digest(flipped) == digest(table)
    assert fingerprint(flipped).schema_hash == fingerprint(table).schema_hash


def test_one_changed_cell_changes_the_digest() -> None:
    table = orders()
    original = digest(table)
    changes = {
        "id": pa.array([1, 2, 3, 5], pa.int64()),
        "name": ["Thabo", "Anna", None, "Sipho "],
        "amount": [10.5, math.nan, -0.0, None],
        "paid": [True, False, False, True],
        "at": pa.array(
            [dt.datetime(2024, 1, i + 1, 0, 0, 0, int(i == 3), tzinfo=UTC) for i in range(4)],
            pa.timestamp("us", tz="UTC"),
        ),
    }
    for name, column in changes.items():
        index = table.column_names.index(name)
        changed = table.set_column(
            index, table.schema.field(name), pa.array(column, table.schema.field(name).type)
        )
        assert digest(changed) != original, f"a changed cell in {name!r} went unseen"


def test_a_null_of_a_nullable_pandas_column_is_an_arrow_null() -> None:
    # That null is not NaN is a promise of every engine: the conformance suite's.
    with_null = pa.table({"x": pa.array([1.0, None])})
    nullable = pd.DataFrame({"x": pd.array([1.0, None], dtype="Float64")})
    assert digest(nullable) == digest(with_null)


def test_time_zone_does_not_matter() -> None:
    instants = [
        dt.datetime(2024, 3, 31, 1, 30, tzinfo=UTC),
        dt.datetime(1999, 12, 31, 23, 0, tzinfo=UTC),
    ]
    utc = pa.table({"at": pa.array(instants, pa.timestamp("us", tz="UTC"))})
    expected = digest(utc)
    for zone in ("Asia/Kolkata", "America/Sao_Paulo", "Pacific/Chatham"):
        assert (
            digest(utc.cast(pa.schema([pa.field("at", pa.timestamp("us", tz=zone))]))) == expected
        )
        frame = pd.DataFrame({"at": pd.Series(instants).dt.tz_convert(zone)})
        assert digest(frame) == expected
    previous = os.environ.get("TZ")
    os.environ["TZ"] = "America/Sao_Paulo"
    time.tzset()
    try:
        assert digest(utc) == expected  # the machine's zone does not leak in either
    finally:
        if previous is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = previous
        time.tzset()


class _BrokenPort:
    """A frame whose rows cannot be read."""

    schema = {"id": "int64"}  # noqa: RUF012

    def collect(self):
        raise ConnectionError("the cluster went away")


@pytest.mark.parametrize(
    ("frame", "error_type"),
    [
        (_BrokenPort(), "ConnectionError"),
        (pd.DataFrame([[1, 2]], columns=["a", "a"]), "ValueError"),
        (pa.table({"wait": pa.array([dt.timedelta(seconds=1)])}), "UnsupportedTypeError"),
        (object(), "TypeError"),
    ],
    ids=["port-that-fails", "duplicate-columns", "type-without-a-name", "not-a-frame"],
)
def test_honest_failure_never_uses_the_schema_hash(frame, error_type: str) -> None:
    fp = fingerprint(frame)
    assert isinstance(fp, Fingerprint)
    assert fp.data_hash is None
    assert fp.row_count is None
    assert not fp.is_complete
    assert fp.error is not None and fp.error.startswith(f"{error_type}: ")
    assert fp.schema_hash != fp.data_hash


def test_an_empty_table_has_a_digest_of_its_schema_and_zero_rows() -> None:
    empty = orders().slice(0, 0)
    fp = fingerprint(empty)
    pairs = arrow_schema_pairs(empty)
    assert fp.row_count == 0
    assert fp.data_hash == data_hash(pairs, 0, (0, 0))
    assert fp.schema_hash == schema_hash(pairs)
    assert digest(empty.drop_columns(["name"])) != fp.data_hash


def test_a_table_without_columns_counts_its_rows() -> None:
    three = fingerprint(no_column_table(3))
    assert three.row_count == 3
    assert three.data_hash == data_hash([], 3, (0, 0))
    assert three.data_hash != digest(no_column_table(2))
    assert digest(pd.DataFrame(index=range(3))) == three.data_hash


def test_same_digest_on_arrow_pandas_polars_and_a_port() -> None:
    pl = pytest.importorskip("polars")
    table = orders()
    expected = digest(table)
    assert digest(table.to_pandas(types_mapper=pd.ArrowDtype)) == expected
    assert digest(pl.from_arrow(table)) == expected

    class Port:
        schema = dict(arrow_schema_pairs(table))  # noqa: RUF012

        def collect(self):
            return table.to_pylist()

    assert digest(Port()) == expected
    assert fingerprint_rows(table.to_pylist(), arrow_schema_pairs(table)).data_hash == expected


def test_wide_rows_are_hashed_in_slices_that_stay_within_the_byte_budget(monkeypatch):
    from ubunye_rows.hashing import arrow_lines

    monkeypatch.setattr(arrow_lines, "SLICE_BYTES", 1 << 20)
    text = ["x" * 65_536 + str(i) for i in range(100)]
    table = pa.table({"doc": text, "id": list(range(100))})
    slices = list(arrow_lines.table_slices(table, ["doc", "id"]))
    assert sum(piece.num_rows for piece in slices) == 100
    assert max(piece.num_rows for piece in slices) <= 16
    rows = table.to_pylist()
    assert fingerprint(table) == fingerprint_rows(rows, arrow_schema_pairs(table))


@pytest.mark.parametrize("rows", [2_000, 200_000])
def test_a_frame_converts_to_the_table_pyarrow_makes_on_its_own_threads(rows) -> None:
    frame = pd.DataFrame(
        {
            "id": range(rows),
            "name": [f"n{i % 97}" for i in range(rows)],
            "at": pd.date_range("2026-01-01", periods=rows, freq="s", tz="UTC"),
        }
    ).set_index("id")
    for keep in (None, True, False):
        expected = pa.Table.from_pandas(frame, preserve_index=keep)
        assert arrow_from_pandas(frame, preserve_index=keep).equals(expected, check_metadata=True)
