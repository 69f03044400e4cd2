"""Receipts for assets Dagster launches elsewhere through Pipes (docs/pipes.md).

Every test runs real Pipes: ``dg.PipesSubprocessClient`` starts a job in tests/pipes_jobs/ with
a Python that has ubunye-rows and dagster-pipes and cannot import dagster.
"""

import importlib.util
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest
from reference_cli import reference_cli

from ubunye_core.cli import main as ubunye_dagster_cli
from ubunye_core.records.drift import INPUTS_CHANGED, SAME_INPUTS
from ubunye_core.records.model import RunRecord
from ubunye_core.store import LineageStore
from ubunye_dagster import UbunyeIOManager, UbunyeResource, UnverifiedReadError
from ubunye_dagster.drift.sensor import build_drift_sensor
from ubunye_dagster.receipts import metadata as keys
from ubunye_rows import code_hash, environment_hash, fingerprint

JOBS = Path(__file__).parents[1] / "pipes_jobs"
DOCS_PAGE = Path(__file__).parents[2] / "docs" / "pipes.md"
RAW = pd.DataFrame(
    {
        "id": [1, 2, 3, 4, 5],
        "region": ["north", "south", "north", "south", "north"],
        "qty": [2, 0, 5, 1, 3],
        "price": [1.5, 2.0, 3.25, 4.0, 0.75],
    }
)
REGIONS = dg.StaticPartitionsDefinition(["north", "south"])


def kept_orders(raw: pd.DataFrame) -> pd.DataFrame:
    """What orders_job.py writes from ``raw``, computed here."""
    orders = raw[raw["qty"] > 0].reset_index(drop=True)
    orders["total"] = orders["qty"] * orders["price"]
    return orders


class Shop:
    """One usecase folder: the raw input, the external jobs' targets, records and resources."""

    def __init__(self, root: Path, python: Path):
        self.root, self.python = root, python
        self.source, self.target = root / "raw_orders.parquet", root / "out" / "orders.parquet"
        RAW.to_parquet(self.source, index=False)
        self.settings = UbunyeResource(usecase_dir=str(root))

    def resources(self) -> dict[str, Any]:
        # No PYTHONPATH reaches the job: it imports only what its own Python has.
        client = dg.PipesSubprocessClient(env={"PYTHONPATH": "", "PYTHONNOUSERSITE": "1"})
        return {
            "ubunye": self.settings,
            "pipes": client,
            "io_manager": UbunyeIOManager(base_path=str(self.root / "data"), ubunye=self.settings),
        }

    def command(self, job: str) -> list[str]:
        return [str(self.python), str(JOBS / job)]

    def extras(self, **more: Any) -> dict[str, Any]:
        return {"source": str(self.source), "target": str(self.target), **more}

    def run(self, job: str, ubunye: UbunyeResource, pipes: Any, context: Any, **extras: Any):
        """The shop's ``job`` run by the Pipes client ``pipes`` for the asset's ``context``, with
        the shop's extras and ``extras``; each receipt it reports saved as its asset's record."""
        command, more = self.command(job), self.extras(**extras)
        return ubunye.run_pipes(pipes, context=context, command=command, extras=more)

    def record(self, task_path: str, run_id: str) -> RunRecord:
        return LineageStore.for_usecase_dir(self.root).load(task_path, run_id)


def orders_asset(shop: Shop, **extras: Any) -> dg.AssetsDefinition:
    partitioned = extras.pop("partitioned", False)

    @dg.asset(group_name="shop", partitions_def=REGIONS if partitioned else None)
    def orders(
        context: dg.AssetExecutionContext, ubunye: UbunyeResource, pipes: dg.PipesSubprocessClient
    ) -> dg.MaterializeResult:
        return shop.run("orders_job.py", ubunye, pipes, context, **extras).get_materialize_result()

    return orders


def shop_assets(shop: Shop, **extras: Any) -> dg.AssetsDefinition:
    @dg.multi_asset(
        specs=[
            dg.AssetSpec(["shop", "orders"], group_name="shop"),
            dg.AssetSpec(["shop", "summary"], group_name="shop", deps=[["shop", "orders"]]),
        ]
    )
    def shop_job(
        context: dg.AssetExecutionContext, ubunye: UbunyeResource, pipes: dg.PipesSubprocessClient
    ):
        return shop.run("shop_job.py", ubunye, pipes, context, **extras).get_results()

    return shop_job


@dg.asset(group_name="shop")
def big_orders(orders: pd.DataFrame) -> pd.DataFrame:
    return orders[orders["total"] > 2].reset_index(drop=True)


@pytest.fixture
def shop(tmp_path: Path, external_python: Path) -> Shop:
    return Shop(tmp_path, external_python)


@pytest.fixture
def instance():
    with (
        tempfile.TemporaryDirectory(prefix="ubunye-pipes-") as home,
        dg.instance_for_test(temp_dir=home) as test_instance,
    ):
        yield test_instance


def materialise(shop: Shop, assets: list[Any], **kwargs: Any) -> dg.ExecuteInProcessResult:
    return dg.materialize(assets, resources=shop.resources(), **kwargs)


def failed_shop(
    tmp_path_factory, python: Path, **extras: Any
) -> tuple[Shop, dg.ExecuteInProcessResult]:
    """A multi-asset shop job run once to its failure, with ``extras`` saying where it fails."""
    shop = Shop(tmp_path_factory.mktemp("failed-shop"), python)
    result = materialise(shop, [shop_assets(shop, **extras)], raise_on_error=False)
    assert not result.success
    return shop, result


@pytest.fixture(scope="module")
def failed_at_start(tmp_path_factory, external_python):
    """The shop job raising before it reports anything (it reports no evidence of its own)."""
    return failed_shop(tmp_path_factory, external_python, fail_at_start=True)


@pytest.fixture(scope="module")
def failed_midway(tmp_path_factory, external_python):
    """The shop job raising after it reported the receipt of shop/orders."""
    return failed_shop(tmp_path_factory, external_python, fail_after_orders=True)


def trace_args(shop: Shop, task: str, run_id: str) -> list[str]:
    return ["-d", str(shop.root), "-u", "dagster", "-p", "shop", "-t", task, "--run-id", run_id]


# --- the external side -----------------------------------------------------------------------


def test_the_external_python_has_ubunye_rows_and_dagster_pipes_and_cannot_import_dagster(
    external_python,
):
    has = subprocess.run(
        [str(external_python), "-c", "import ubunye_rows.pipes, dagster_pipes"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert has.returncode == 0, has.stderr
    lacks = subprocess.run(
        [str(external_python), "-c", "import dagster"], capture_output=True, text=True, timeout=120
    )
    assert lacks.returncode != 0
    assert "No module named 'dagster'" in lacks.stderr


# --- the record ------------------------------------------------------------------------------


@pytest.mark.smoke
def test_a_pandas_job_through_pipes_records_the_digest_of_the_rows_it_wrote(shop):
    result = materialise(shop, [orders_asset(shop)])

    record = shop.record("dagster/shop/orders", result.run_id)
    assert record.status == "success" and record.record_version == 2
    [output] = record.outputs
    expected = fingerprint(kept_orders(RAW))
    assert (
        output.data_hash
        == expected.data_hash
        == fingerprint(pd.read_parquet(shop.target)).data_hash
    )
    assert (output.row_count, output.location) == (4, str(shop.target))
    [read] = record.inputs
    assert (read.name, read.data_hash) == ("raw_orders", fingerprint(RAW).data_hash)
    [event] = result.asset_materializations_for_node("orders")
    assert event.metadata[keys.DATA_HASH].value == expected.data_hash
    assert event.metadata[keys.RECORD_PATH].value.endswith(f"{result.run_id}.json")
    assert event.metadata[keys.INPUTS].value["raw_orders"]["data_hash"] == read.data_hash
    assert event.metadata[keys.STORED_AT].value == str(shop.target)
    assert event.tags["dagster/data_version"] == expected.data_hash


def test_the_record_carries_the_external_process_environment_and_the_job_folder_code_hash(shop):
    result = materialise(shop, [orders_asset(shop)])

    record = shop.record("dagster/shop/orders", result.run_id)
    assert record.code_hash == code_hash(JOBS)
    assert "dagster" not in record.environment["packages"]
    assert "pandas" in record.environment["packages"]
    assert record.environment_hash == environment_hash(record.environment)
    [event] = result.asset_materializations_for_node("orders")
    assert event.metadata[keys.CODE_HASH].value == code_hash(JOBS)
    assert event.metadata[keys.ENVIRONMENT_HASH].value == record.environment_hash


def test_the_reference_cli_reads_the_record_of_a_pipes_asset(shop):
    result = materialise(shop, [orders_asset(shop)])

    listed = subprocess.run(
        [reference_cli(), "lineage", "list", "-d", str(shop.root), "-u", "dagster", "-p", "shop",
         "-t", "orders", "--json"],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    [run] = json.loads(listed.stdout)
    assert (run["run_id"], run["status"]) == (result.run_id, "success")
    assert run["outputs"][0]["data_hash"] == fingerprint(kept_orders(RAW)).data_hash
    traced = subprocess.run(
        [reference_cli(), "lineage", "trace", "-d", str(shop.root), "-u", "dagster", "-p", "shop",
         "-t", "orders", "--run-id", result.run_id],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    assert "raw_orders" in traced.stdout


def test_a_multi_asset_job_reports_one_receipt_per_asset(shop):
    result = materialise(shop, [shop_assets(shop)])

    orders = shop.record("dagster/shop/shop.orders", result.run_id)
    summary = shop.record("dagster/shop/shop.summary", result.run_id)
    kept = RAW[RAW["qty"] > 0].reset_index(drop=True)
    assert orders.outputs[0].data_hash == fingerprint(kept).data_hash
    expected = fingerprint(kept.groupby("region", as_index=False)["qty"].sum())
    assert summary.outputs[0].data_hash == expected.data_hash
    [read] = summary.inputs
    assert (read.name, read.data_hash) == ("shop/orders", orders.outputs[0].data_hash)
    assert summary.variables["input_asset_keys"] == {"shop/orders": "shop/orders"}
    versions = {
        event.asset_key.to_user_string(): event.tags["dagster/data_version"]
        for event in result.asset_materializations_for_node("shop_job")
    }
    assert versions == {
        "shop/orders": orders.outputs[0].data_hash,
        "shop/summary": expected.data_hash,
    }


def test_each_partition_gets_its_own_record_of_its_own_rows(shop):
    result = materialise(shop, [orders_asset(shop, partitioned=True)], partition_key="south")

    record = shop.record("dagster/shop/orders", f"{result.run_id}.south")
    south = RAW[RAW["region"] == "south"].reset_index(drop=True)
    assert record.outputs[0].data_hash == fingerprint(kept_orders(south)).data_hash
    assert record.inputs[0].data_hash == fingerprint(south).data_hash
    assert record.variables["partition_key"] == "south"


def test_an_asset_reported_without_a_receipt_records_the_evidence_the_job_reported(shop):
    result = materialise(shop, [orders_asset(shop, no_receipt=True)])

    record = shop.record("dagster/shop/orders", result.run_id)
    [output] = record.outputs
    assert output.data_hash is None and "without a receipt" in output.hash_error
    assert record.code_hash == code_hash(JOBS)
    assert "dagster" not in record.environment["packages"]
    assert record.environment_hash == environment_hash(record.environment)


def test_a_frame_whose_rows_cannot_be_read_gets_an_honest_hash_error(shop):
    result = materialise(shop, [orders_asset(shop, unreadable=True)])

    [output] = shop.record("dagster/shop/orders", result.run_id).outputs
    assert output.data_hash is None and output.row_count is None
    assert output.hash_error
    [event] = result.asset_materializations_for_node("orders")
    assert keys.DATA_HASH not in event.metadata
    assert event.metadata[keys.HASH_ERROR].value == output.hash_error


# --- when the external process fails ----------------------------------------------------------


@pytest.mark.smoke
def test_an_external_job_failing_midway_leaves_error_records_with_what_it_reported(failed_midway):
    shop, result = failed_midway
    orders = shop.record("dagster/shop/shop.orders", result.run_id)
    summary = shop.record("dagster/shop/shop.summary", result.run_id)
    assert orders.status == summary.status == "error"
    kept = RAW[RAW["qty"] > 0].reset_index(drop=True)
    assert orders.outputs[0].data_hash == fingerprint(kept).data_hash
    assert orders.inputs[0].data_hash == fingerprint(RAW).data_hash
    assert summary.outputs == []
    for record in (orders, summary):
        assert "ConnectionError: the warehouse went away while writing the summary" in record.error
    assert result.get_asset_materialization_events() == []


def test_the_asset_a_failed_job_never_reported_carries_the_evidence_it_reported_with_another(
    failed_midway,
):
    shop, result = failed_midway
    orders = shop.record("dagster/shop/shop.orders", result.run_id)
    summary = shop.record("dagster/shop/shop.summary", result.run_id)
    assert orders.code_hash == code_hash(JOBS)
    assert "dagster" not in orders.environment["packages"]
    assert (summary.code_hash, summary.environment, summary.environment_hash) == (
        orders.code_hash,
        orders.environment,
        orders.environment_hash,
    )
    assert summary.inputs == [] and summary.outputs == []  # the evidence only, not the inputs


def test_the_error_of_a_failed_job_names_the_exception_type_once(failed_midway):
    shop, result = failed_midway
    for task in ("shop.orders", "shop.summary"):
        error = shop.record(f"dagster/shop/{task}", result.run_id).error
        assert error.count("ConnectionError") == 1, error
        assert error.endswith(
            "(the external process raised ConnectionError: "
            "the warehouse went away while writing the summary)"
        )


def test_a_job_failing_before_it_reports_anything_records_no_code_or_environment_and_says_so(
    failed_at_start,
):
    shop, result = failed_at_start
    for task in ("shop.orders", "shop.summary"):
        record = shop.record(f"dagster/shop/{task}", result.run_id)
        assert record.status == "error" and record.record_version == 2
        assert (record.code_hash, record.environment, record.environment_hash) == (None, {}, None)
        assert "the external process raised ConnectionError: the warehouse refused" in record.error
        assert "reported no code hash or environment before it failed" in record.error


def test_both_clis_trace_the_record_of_a_job_that_reported_nothing(failed_at_start, capsys):
    shop, result = failed_at_start
    args = trace_args(shop, "shop.orders", result.run_id)
    theirs = subprocess.run(
        [reference_cli(), "lineage", "trace", *args], capture_output=True, text=True, timeout=120
    )
    assert theirs.returncode == 0, theirs.stderr
    printed = " ".join(theirs.stdout.split())
    assert "reported no code hash or environment" in printed
    assert "code : -" in printed and "environment : -" in printed
    assert ubunye_dagster_cli(["lineage", "trace", *args, "--json"]) == 0
    mine = json.loads(capsys.readouterr().out)
    assert (mine["code_hash"], mine["environment"], mine["environment_hash"]) == (None, {}, None)
    assert "reported no code hash or environment" in mine["error"]


def test_a_job_that_reports_its_evidence_as_it_starts_has_it_recorded_when_it_fails_next(shop):
    result = materialise(shop, [orders_asset(shop, fail_at_start=True)], raise_on_error=False)

    assert not result.success
    record = shop.record("dagster/shop/orders", result.run_id)
    assert record.status == "error" and record.outputs == []
    assert record.code_hash == code_hash(JOBS)
    assert "dagster" not in record.environment["packages"]
    assert "pandas" in record.environment["packages"]
    assert record.environment_hash == environment_hash(record.environment)
    assert "reported no code hash" not in record.error


def test_the_openlineage_events_of_a_pipes_asset_carry_its_digest(shop, monkeypatch):
    events_file = shop.root / "events.jsonl"
    config = shop.root / "openlineage.yml"
    config.write_text(
        f"transport:\n  type: file\n  log_file_path: {events_file}\n  append: true\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("OPENLINEAGE_CONFIG", str(config))
    materialise(shop, [orders_asset(shop)])

    events = [json.loads(line) for line in events_file.read_text(encoding="utf-8").splitlines()]
    assert [e["eventType"] for e in events] == ["START", "COMPLETE"]
    [written] = events[1]["outputs"]
    assert written["name"] == str(shop.target)
    assert written["facets"]["version"]["datasetVersion"] == fingerprint(kept_orders(RAW)).data_hash


# --- judged like any other -------------------------------------------------------------------


def drift_verdict(shop: Shop, instance: dg.DagsterInstance) -> dg.AssetCheckEvaluation:
    data = build_drift_sensor([orders_asset(shop)]).evaluate_tick(
        dg.build_sensor_context(instance=instance)
    )
    return [e for e in data.asset_events if e.asset_key == dg.AssetKey("orders")][-1]


def compare_verdict(shop: Shop, capsys) -> dict[str, Any]:
    code = ubunye_dagster_cli(
        ["lineage", "compare", "-d", str(shop.root), "--asset", "orders", "--json", "--drift"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)["drift"]["orders"]


def materialise_earlier(shop: Shop, instance: dg.DagsterInstance) -> None:
    """One materialisation of orders whose record is dated a day back, so it lists as older."""
    run = materialise(shop, [orders_asset(shop)], instance=instance)
    path = LineageStore.for_usecase_dir(shop.root).path_for("dagster/shop/orders", run.run_id)
    os.utime(path.path, (path.stat().st_mtime - 86_400,) * 2)


def test_changed_rows_from_the_same_inputs_code_and_environment_are_flagged(shop, instance, capsys):
    materialise_earlier(shop, instance)
    materialise(shop, [orders_asset(shop, extra_row=True)], instance=instance)

    flagged = drift_verdict(shop, instance)
    assert not flagged.passed
    assert flagged.metadata["ubunye/reason"].value == SAME_INPUTS
    drift = compare_verdict(shop, capsys)
    assert (drift["verdict"], drift["reason"], drift["flagged"]) == ("drift", SAME_INPUTS, True)


def test_changed_rows_from_changed_inputs_are_explained(shop, instance, capsys):
    materialise_earlier(shop, instance)
    RAW.assign(qty=RAW["qty"] + 1).to_parquet(shop.source, index=False)
    materialise(shop, [orders_asset(shop)], instance=instance)

    explained = drift_verdict(shop, instance)
    assert explained.passed
    assert explained.metadata["ubunye/reason"].value == INPUTS_CHANGED
    drift = compare_verdict(shop, capsys)
    assert (drift["verdict"], drift["reason"]) == ("explained", INPUTS_CHANGED)
    assert drift["inputs_moved"] == ["raw_orders"]


def test_lineage_diff_names_the_row_a_pipes_job_added(shop, instance, capsys):
    first = str(shop.root / "out" / "orders-1.parquet")
    materialise(shop, [orders_asset(shop, target=first)], instance=instance)
    materialise(shop, [orders_asset(shop, extra_row=True)], instance=instance)

    code = ubunye_dagster_cli(
        ["lineage", "diff", "-d", str(shop.root), "--asset", "orders", "--json"]
    )
    out, err = capsys.readouterr()
    assert code == 1, err
    report = json.loads(out)
    assert (report["removed"], report["added"]) == (0, 1)
    assert report["sample"]["added"][0]["id"] == 99


# --- reads downstream ------------------------------------------------------------------------


@pytest.mark.smoke
def test_an_io_managed_asset_reads_the_table_the_job_wrote_and_verifies_it(shop, instance):
    result = materialise(shop, [orders_asset(shop), big_orders], instance=instance)

    record = shop.record("dagster/shop/big_orders", result.run_id)
    [read] = record.inputs
    assert read.location == str(shop.target)
    assert read.data_hash == fingerprint(kept_orders(RAW)).data_hash
    assert read.source_note.startswith("verified: the rows match the digest recorded by")


def test_a_table_changed_after_the_job_wrote_it_fails_the_read(shop, instance):
    materialise(shop, [orders_asset(shop)], instance=instance)
    tampered = pd.read_parquet(shop.target)
    tampered.loc[0, "qty"] += 1
    tampered.to_parquet(shop.target, index=False)

    result = materialise(
        shop, [orders_asset(shop), big_orders], selection=[big_orders], instance=instance,
        raise_on_error=False,
    )  # fmt: skip
    assert not result.success
    [failure] = result.get_step_failure_events()
    assert failure.step_failure_data.error.cause.cls_name == UnverifiedReadError.__name__
    assert str(shop.target) in failure.step_failure_data.error.cause.message
    record = shop.record("dagster/shop/big_orders", result.run_id)
    assert record.status == "error"
    assert record.inputs[0].source_note.startswith("verification failed")


# --- the documented example ------------------------------------------------------------------


def documented_example() -> tuple[str, str]:
    """The external script and the Dagster side of docs/pipes.md's subprocess example."""
    text = DOCS_PAGE.read_text(encoding="utf-8")
    section = text.split("## The subprocess example, in full", 1)[1].split("\n## ", 1)[0]
    script, definitions = re.findall(r"```python\n(.*?)```", section, re.S)
    return script, definitions


def test_the_documented_subprocess_example_runs_as_written_in_a_fresh_folder(
    tmp_path, external_python, monkeypatch
):
    script, definitions = documented_example()
    definitions, found = re.subn(
        r'^JOB_PYTHON = ".*?"', f"JOB_PYTHON = {str(external_python)!r}", definitions, flags=re.M
    )
    assert found == 1
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "orders_job.py").write_text(script, encoding="utf-8")
    (tmp_path / "shop_definitions.py").write_text(definitions, encoding="utf-8")
    RAW.to_parquet(tmp_path / "raw_orders.parquet", index=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", "")  # the job imports only what its own Python has
    spec = importlib.util.spec_from_file_location("shop_definitions", "shop_definitions.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    result = dg.materialize([module.orders, module.big_orders], resources=module.defs.resources)
    record = LineageStore.for_usecase_dir(tmp_path).load("dagster/shop/orders", result.run_id)
    assert record.status == "success"
    assert record.outputs[0].location == "out/orders.parquet"
    assert record.outputs[0].data_hash == fingerprint(kept_orders(RAW)).data_hash
    assert record.code_hash == code_hash(tmp_path / "jobs")
    read = LineageStore.for_usecase_dir(tmp_path).load("dagster/shop/big_orders", result.run_id)
    assert read.inputs[0].source_note.startswith("verified: the rows match the digest")
