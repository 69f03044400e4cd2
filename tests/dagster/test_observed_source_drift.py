"""The drift sensor judges an asset reading an observed source by the source's observations:
rows that moved at the source explain the asset's new rows ("inputs changed"), and new rows
from a source whose rows held are flagged ("same inputs"), not "inputs unknown"."""

from __future__ import annotations

import random
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from ubunye_dagster import with_ubunye
from ubunye_dagster.drift.sensor import build_drift_sensor

SOURCE = dg.AssetKey(["raw", "orders"])
ORDERS = pd.DataFrame({"region": ["north", "south"], "amount": [10, 5]})


@pytest.fixture
def instance():
    with dg.instance_for_test() as temporary:
        yield temporary


def shop(tmp_path: Path, noisy: bool) -> dg.Definitions:
    """The orders source (written once already) observed by its rows, and a report of it."""
    path = tmp_path / "orders.parquet"
    ORDERS.to_parquet(path, index=False)

    @dg.asset(deps=[SOURCE])
    def report() -> pd.DataFrame:
        totals = pd.read_parquet(path).groupby("region", as_index=False)["amount"].sum()
        return totals.assign(noise=random.random() if noisy else 0.0)

    runs = [
        dg.define_asset_job("observe", selection=[SOURCE]),
        dg.define_asset_job("build", selection=[report]),
    ]
    return with_ubunye(
        dg.Definitions(assets=[dg.AssetSpec(SOURCE), report], jobs=runs),
        observe={"raw/orders": {"path": str(path)}},
        usecase_dir=str(tmp_path),
        base_path=str(tmp_path / "data"),
    )


def day(defs: dg.Definitions, instance: dg.DagsterInstance, orders: pd.DataFrame, path: Path):
    """The source written, observed, and the report built from it."""
    orders.to_parquet(path, index=False)
    for job in ("observe", "build"):
        assert defs.resolve_job_def(job).execute_in_process(instance=instance).success


def latest_outcome(instance: dg.DagsterInstance) -> tuple[str, bool]:
    evaluation = [
        event
        for event in build_drift_sensor(["report"])
        .evaluate_tick(dg.build_sensor_context(instance=instance))
        .asset_events
        if event.asset_key == dg.AssetKey("report")
    ][-1]
    return evaluation.metadata["ubunye/outcome"].value, evaluation.passed


def test_new_rows_from_a_source_whose_rows_moved_are_explained_as_inputs_changed(
    tmp_path, instance
):
    defs = shop(tmp_path, noisy=False)
    day(defs, instance, ORDERS, tmp_path / "orders.parquet")
    day(defs, instance, ORDERS.assign(amount=[11, 5]), tmp_path / "orders.parquet")

    assert latest_outcome(instance) == ("explained (inputs changed: raw/orders)", True)


def test_new_rows_from_a_source_rewritten_with_the_same_rows_are_flagged_same_inputs(
    tmp_path, instance
):
    defs = shop(tmp_path, noisy=True)
    day(defs, instance, ORDERS, tmp_path / "orders.parquet")
    day(defs, instance, ORDERS.iloc[::-1], tmp_path / "orders.parquet")

    assert latest_outcome(instance) == ("drift (same inputs)", False)
