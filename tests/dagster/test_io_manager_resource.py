"""UbunyeResource for assets that write their own data, and records the reference CLI can read."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
from disk_flushes import NAMES_FDS, flushed_files
from reference_cli import reference_cli

from ubunye_core.store import LineageStore
from ubunye_dagster import UbunyeIOManager, UbunyeResource, with_error_records
from ubunye_rows import fingerprint

FRAME = pd.DataFrame({"sku": ["a", "b", "c"], "qty": [3, 0, 7]})


@dg.asset(group_name="stock")
def stock() -> pd.DataFrame:
    return FRAME


@dg.asset(group_name="stock")
def exported_stock(context, ubunye: UbunyeResource, stock: pd.DataFrame) -> dg.MaterializeResult:
    target = Path(ubunye.usecase_dir) / "exports" / "stock.csv"
    target.parent.mkdir(parents=True, exist_ok=True)
    in_stock = stock[stock["qty"] > 0]
    in_stock.to_csv(target, index=False)
    receipt = ubunye.record_output(context, in_stock, location=str(target), format="csv")
    return receipt.materialize_result()


def resources(root: Path) -> dict:
    settings = UbunyeResource(usecase_dir=str(root))
    return {
        "io_manager": UbunyeIOManager(base_path=str(root / "data"), ubunye=settings),
        "ubunye": settings,
    }


def test_the_resource_fingerprint_is_rows_v1_of_the_frame():
    assert UbunyeResource().fingerprint(FRAME) == fingerprint(FRAME)


def test_an_asset_that_writes_its_own_data_records_a_hashed_output_beside_its_inputs(tmp_path):
    result = dg.materialize([stock, exported_stock], resources=resources(tmp_path))

    record = LineageStore.for_usecase_dir(tmp_path).load(
        "dagster/stock/exported_stock", result.run_id
    )
    assert record.status == "success"
    [output] = record.outputs
    expected = fingerprint(FRAME[FRAME["qty"] > 0])
    assert (output.data_hash, output.row_count) == (expected.data_hash, 2)
    assert (output.format, output.location) == ("csv", str(tmp_path / "exports" / "stock.csv"))
    [read] = record.inputs
    assert read.name == "stock" and read.data_hash == fingerprint(FRAME).data_hash
    [event] = result.asset_materializations_for_node("exported_stock")
    assert event.metadata["ubunye/data_hash"].value == expected.data_hash
    assert event.metadata["ubunye/inputs"].value["stock"]["data_hash"] == read.data_hash
    assert event.tags["dagster/data_version"] == expected.data_hash


@dg.asset
def two_exports(context, ubunye: UbunyeResource) -> dg.MaterializeResult:
    ubunye.record_output(context, FRAME, location="db://stock", name="stock_table")
    receipt = ubunye.record_output(context, FRAME.head(1), location="db://top", name="top_table")
    return receipt.materialize_result()


def test_each_output_an_asset_records_is_kept_in_its_record(tmp_path):
    result = dg.materialize([two_exports], resources=resources(tmp_path))

    record = LineageStore.for_usecase_dir(tmp_path).load(
        "dagster/default/two_exports", result.run_id
    )
    assert [(o.name, o.row_count) for o in record.outputs] == [("stock_table", 3), ("top_table", 1)]


@dg.asset
def export_then_fail(context, ubunye: UbunyeResource) -> None:
    ubunye.record_output(context, FRAME, location="db://stock")
    raise ConnectionError("lost the connection after writing")


def test_a_recorded_output_followed_by_a_failure_leaves_an_error_record(tmp_path):
    result = dg.materialize([export_then_fail], resources=resources(tmp_path), raise_on_error=False)

    assert not result.success
    [record] = LineageStore.for_usecase_dir(tmp_path).list_runs("dagster/default/export_then_fail")
    assert record.status == "error"
    assert record.error == "ConnectionError: lost the connection after writing"
    assert record.outputs[0].row_count == 3


@dg.asset(group_name="stock")
def export_unreachable(context, ubunye: UbunyeResource) -> None:
    raise ConnectionError("export target refused the password=hunter2")


def test_an_asset_failing_before_it_records_anything_leaves_an_error_record(tmp_path):
    settings = UbunyeResource(usecase_dir=str(tmp_path))
    result = dg.materialize(
        with_error_records([export_unreachable]),
        resources={"io_manager": dg.InMemoryIOManager(), "ubunye": settings},
        raise_on_error=False,
    )

    assert not result.success
    [record] = LineageStore.for_usecase_dir(tmp_path).list_runs("dagster/stock/export_unreachable")
    assert record.run_id == result.run_id and record.status == "error"
    assert record.error.startswith("ConnectionError: export target refused")
    assert "hunter2" not in record.error
    assert [t["step"] for t in record.timings] == ["Transform:export_unreachable"]


def test_records_are_readable_by_the_reference_cli(tmp_path):
    result = dg.materialize([stock, exported_stock], resources=resources(tmp_path))
    ubunye = pytest.importorskip("ubunye")
    assert ubunye  # the reference is installed as the test oracle

    listed = subprocess.run(
        [reference_cli(), "lineage", "list", "-d", str(tmp_path), "-u", "dagster", "-p", "stock",
         "-t", "exported_stock", "--json"],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip

    [run] = json.loads(listed.stdout)
    record = LineageStore.for_usecase_dir(tmp_path).load(
        "dagster/stock/exported_stock", result.run_id
    )
    assert run["run_id"] == result.run_id
    assert run["status"] == "success"
    assert run["outputs"][0]["data_hash"] == record.outputs[0].data_hash
    assert run["inputs"][0]["data_hash"] == record.inputs[0].data_hash


@NAMES_FDS
def test_durable_records_flushes_every_record_the_io_manager_saves(tmp_path, monkeypatch):
    flushed = flushed_files(monkeypatch)
    settings = UbunyeResource(usecase_dir=str(tmp_path), durable_records=True)
    manager = UbunyeIOManager(base_path=str(tmp_path / "data"), ubunye=settings)
    result = dg.materialize([stock], resources={"io_manager": manager})

    assert result.success
    record_path = result.asset_materializations_for_node("stock")[0].metadata
    folder = os.path.dirname(record_path["ubunye/record_path"].value)
    assert flushed and flushed[-1] == folder  # the record file, then the folder it is renamed in
    assert any(os.path.dirname(p) == folder and p.endswith(".tmp") for p in flushed)
