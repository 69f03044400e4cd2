"""The drift check names the rows that drifted: how many at most, and samples when stored."""

from __future__ import annotations

import random

import dagster as dg
import pandas as pd
from test_sensor import evaluations_of, instance, materialise, meta, tick  # noqa: F401

from ubunye_core.records.drift import SAME_INPUTS
from ubunye_dagster import UbunyeIOManager, UbunyeResource
from ubunye_dagster.drift.sensor import build_drift_sensor

ROWS = 400


# It reads no asset, so it declares itself deterministic to be judged strictly.
@dg.asset(metadata={"ubunye/deterministic": True})
def sampled():
    """A non-deterministic asset: two of its rows get a random score on every run."""
    scores = [float(i) for i in range(ROWS)]
    for row in (17, 230):
        scores[row] = random.random()
    return pd.DataFrame({"id": range(ROWS), "score": scores})


def drift_finding(instance, tmp_path, **settings):  # noqa: F811
    io_manager = UbunyeIOManager(
        base_path=str(tmp_path / "data"),
        ubunye=UbunyeResource(usecase_dir=str(tmp_path)),
        **settings,
    )
    resources = {"io_manager": io_manager}
    materialise(instance, [sampled], resources=resources)
    materialise(instance, [sampled], resources=resources)
    flagged = evaluations_of(tick(build_drift_sensor([sampled]), instance, None), "sampled")[-1]
    assert not flagged.passed and meta(flagged, "ubunye/reason") == SAME_INPUTS
    return meta(flagged, "ubunye/rows_changed")["sampled"]


def test_the_drift_check_on_parquet_says_how_many_rows_changed_at_most(instance, tmp_path):  # noqa: F811
    rows = drift_finding(instance, tmp_path)
    at_most = rows["rows_changed_at_most"]
    assert 2 <= at_most["removed"] < ROWS / 4 and 2 <= at_most["added"] < ROWS / 4
    assert "removed" not in rows  # Parquet kept only the newest version
    assert any("no longer the rows" in note for note in rows["notes"])


def test_the_drift_check_on_delta_names_up_to_5_rows_removed_and_added(instance, tmp_path):  # noqa: F811
    rows = drift_finding(instance, tmp_path, format="delta")
    assert rows["rows_changed_at_most"]["removed"] >= 2
    assert {row["id"] for row in rows["removed"]} == {17, 230}
    assert {row["id"] for row in rows["added"]} == {17, 230}
    assert len(rows["removed"]) <= 5 and rows["notes"] == []
