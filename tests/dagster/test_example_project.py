"""The example project: it loads, its shipped data is reproducible, and its pandas and polars
assets leave a run record and a receipt on every materialisation (Spark parts:
tests/spark/test_spark_example.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from example_receipts import (
    ASSET_GROUPS,
    DBT_ASSETS,
    NON_SPARK_ASSETS,
    PARTITIONED,
    assert_receipt_matches_record,
    latest_metadata,
    load_record,
    receipt,
)

from example_project import defs
from example_project.definitions import (
    ASSETS,
    DAILY_JOB,
    DRIFT_SENSOR,
    MAIN_JOB,
    build_definitions,
)
from example_project.paths import OPENLINEAGE_CONFIG, SEED_DIR
from example_project.run import DAYS, TRACED_ASSET, trace_command
from example_project.seed_data.generate import write_seed_data
from ubunye_dagster import CHECK_NAME, build_expectation_checks
from ubunye_dagster.checks.expectations import parse_rules


@pytest.fixture(scope="module")
def pandas_and_polars_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The example's pandas and polars assets materialised into a temp home, for the days."""
    home = tmp_path_factory.mktemp("example")
    local_defs = build_definitions(home)
    selection = dg.AssetSelection.groups("raw", "sales", "customers").without_checks()
    job = dg.define_asset_job("no_spark", selection=selection)
    merged = dg.Definitions.merge(local_defs, dg.Definitions(jobs=[job]))
    with dg.DagsterInstance.ephemeral() as instance:
        results = [
            merged.resolve_job_def("no_spark").execute_in_process(
                instance=instance, partition_key=day
            )
            for day in DAYS
        ]
        yield {"home": home, "instance": instance, "results": results}


def test_the_definitions_load() -> None:
    dg.Definitions.validate_loadable(defs)
    keys = {spec.key.to_user_string() for spec in defs.resolve_all_asset_specs()}
    assert keys == set(ASSET_GROUPS) | DBT_ASSETS
    assert defs.resolve_job_def(MAIN_JOB) is not None
    assert defs.resolve_job_def(DAILY_JOB) is not None


def test_the_main_job_materialises_every_asset() -> None:
    job = defs.resolve_job_def(MAIN_JOB)
    assert {key.to_user_string() for key in job.asset_layer.executable_asset_keys} == set(
        ASSET_GROUPS
    )


def test_the_drift_sensor_watches_every_asset_and_each_shows_the_check() -> None:
    sensor = defs.resolve_sensor_def(DRIFT_SENSOR)
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    check_keys = defs.resolve_asset_graph().asset_check_keys
    reproducible = {key.asset_key.to_user_string() for key in check_keys if key.name == CHECK_NAME}
    assert reproducible == set(ASSET_GROUPS) | DBT_ASSETS


def test_each_declared_expectation_is_an_asset_check_the_main_job_runs() -> None:
    declared = {
        f"{key.to_user_string()}:{rule.name}"
        for assets_def in ASSETS
        for key, metadata in assets_def.metadata_by_key.items()
        for rule in parse_rules(metadata.get("ubunye/expectations"))
    }
    job = defs.resolve_job_def(MAIN_JOB)
    in_job = {key.to_user_string() for key in job.asset_layer.asset_graph.asset_check_keys}
    assert len(declared) == 7 and in_job == declared


def test_the_example_shows_the_checks_and_writes_openlineage_events_to_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The shipped openlineage.yml names its file relative to the repository root.
    home = tmp_path / "example_project"
    monkeypatch.setenv("OPENLINEAGE_CONFIG", str(OPENLINEAGE_CONFIG))
    monkeypatch.delenv("OPENLINEAGE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    selection = dg.AssetSelection.assets(*[k.split("/") for k in ASSET_GROUPS if k != PARTITIONED])
    selection = (selection & dg.AssetSelection.groups("raw", "sales")).without_checks()
    job = dg.define_asset_job(
        "lineage", selection=selection | dg.AssetSelection.checks(*build_expectation_checks(ASSETS))
    )
    merged = dg.Definitions.merge(build_definitions(home), dg.Definitions(jobs=[job]))
    with dg.DagsterInstance.ephemeral() as instance:
        result = merged.resolve_job_def("lineage").execute_in_process(instance=instance)
        evaluations = [
            r.event_log_entry.dagster_event.asset_check_evaluation_data
            for r in instance.get_records_for_run(
                result.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION
            ).records
        ]
        _, order_lines = latest_metadata(instance, "sales/order_lines")

    assert result.success
    assert len(evaluations) == 7 and all(e.passed for e in evaluations)
    assert all({"failed", "total"} <= set(e.metadata) for e in evaluations)
    lines = (home / ".ubunye" / "openlineage_events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    completed = {e["job"]["name"]: e for e in events if e["eventType"] == "COMPLETE"}
    # raw's three outputs, order_lines and (stored as Delta) price_list
    assert len(events) == 2 * len(completed) == 10
    (written,) = completed["sales/sales.order_lines"]["outputs"]
    assert written["facets"]["version"]["datasetVersion"] == order_lines["ubunye/data_hash"]


def test_the_shipped_data_is_what_the_seeded_generator_writes(tmp_path: Path) -> None:
    write_seed_data(tmp_path)
    for name in ("customers.csv", "orders.csv", "products.csv"):
        assert (tmp_path / name).read_bytes() == (SEED_DIR / name).read_bytes(), name


def test_every_pandas_and_polars_materialisation_has_a_record_and_a_receipt(
    pandas_and_polars_run: dict[str, Any],
) -> None:
    home, instance = pandas_and_polars_run["home"], pandas_and_polars_run["instance"]
    assert all(result.success for result in pandas_and_polars_run["results"])
    for asset in sorted(NON_SPARK_ASSETS):
        partition = DAYS[-1] if asset == PARTITIONED else None
        record, metadata = assert_receipt_matches_record(instance, home, asset, partition)
        assert metadata["ubunye/code_hash"] == record["code_hash"], asset


def test_each_day_of_the_daily_asset_has_its_own_record(
    pandas_and_polars_run: dict[str, Any],
) -> None:
    home, instance = pandas_and_polars_run["home"], pandas_and_polars_run["instance"]
    hashes = set()
    for day in DAYS:
        run_id, metadata = latest_metadata(instance, PARTITIONED, day)
        assert metadata["ubunye/partition"] == day
        assert metadata["ubunye/run_id"] == f"{run_id}.{day}"
        record = load_record(home, PARTITIONED, f"{run_id}.{day}")
        assert record["outputs"][0]["data_hash"] == metadata["ubunye/data_hash"]
        hashes.add(metadata["ubunye/data_hash"])
    assert len(hashes) == len(DAYS)


def test_a_polars_output_read_by_pandas_keeps_its_digest(
    pandas_and_polars_run: dict[str, Any],
) -> None:
    instance = pandas_and_polars_run["instance"]
    written = receipt(instance, "customers/customer_stats")
    loaded = receipt(instance, "customers/country_revenue")["ubunye/inputs"]["customer_stats"]
    assert loaded["asset_key"] == "customers/customer_stats"
    assert loaded["data_hash"] == written["ubunye/data_hash"]
    assert loaded["row_count"] == written["dagster/row_count"]


def test_the_trace_command_prints_the_latest_record_of_the_traced_asset(
    pandas_and_polars_run: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from ubunye_core.cli import main

    home, instance = pandas_and_polars_run["home"], pandas_and_polars_run["instance"]
    written = receipt(instance, TRACED_ASSET)["ubunye/data_hash"]
    assert main([*trace_command(home, TRACED_ASSET), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [output["data_hash"] for output in document["outputs"]] == [written]


def test_the_declared_expectations_are_checked_and_receipted(
    pandas_and_polars_run: dict[str, Any],
) -> None:
    home, instance = pandas_and_polars_run["home"], pandas_and_polars_run["instance"]
    run_id, metadata = latest_metadata(instance, "sales/order_lines")
    record = load_record(home, "sales/order_lines", run_id)
    declared = defs.resolve_assets_def(dg.AssetKey(["sales", "order_lines"])).metadata_by_key[
        dg.AssetKey(["sales", "order_lines"])
    ]["ubunye/expectations"]
    assert len(record["expectations"]) == len(declared)
    assert all(entry["passed"] for entry in record["expectations"])
    assert metadata["ubunye/expectation_results"] == record["expectations"]
