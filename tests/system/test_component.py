"""The `dg` component: a project laid out by `create-dagster project` adopts receipts with one
`defs.yaml` naming the type and no attributes, driven by the real `dg` CLI."""

from __future__ import annotations

import inspect
import json
import shutil
import sys
import warnings
from pathlib import Path

import dagster as dg
import pytest
from components_project import (
    COMPONENT_TYPE,
    FEED_DOWN,
    NEEDS_COMPONENTS_DAGSTER,
    copy_project,
    fresh_project_modules,
    receipts_yaml,
    run_tool,
    tool,
)

from ubunye_core.store import LineageStore
from ubunye_dagster.drift.check_spec import CHECK_NAME
from ubunye_dagster.receipts.metadata import DATA_HASH, RECORD_PATH, SUMMARY

pytestmark = [pytest.mark.timeout(900), NEEDS_COMPONENTS_DAGSTER]


@pytest.fixture(scope="module")
def root(tmp_path_factory, components_project) -> Path:
    root = tmp_path_factory.mktemp("components")
    copy_project(components_project, root)
    return root


def project_of(root: Path) -> Path:
    return root / "shop"


def test_dg_list_components_shows_the_receipts_type(root):
    listed = run_tool(root, tool("dg"), "list", "components", "--json")
    assert listed.returncode == 0, listed.stderr
    answer = json.loads(listed.stdout)
    entries = answer["items"] if isinstance(answer, dict) else answer  # 1.13, and older dg
    types = [entry["key"] for entry in entries]
    assert COMPONENT_TYPE in types


def test_dg_scaffold_writes_a_defs_yaml_naming_the_type_and_no_attributes(root):
    text = receipts_yaml(project_of(root)).read_text(encoding="utf-8")
    assert text.split() == ["type:", COMPONENT_TYPE, "attributes:", "{}"]


def test_dg_check_defs_accepts_the_project(root):
    checked = run_tool(root, tool("dg"), "check", "defs")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "All definitions loaded successfully." in checked.stdout + checked.stderr


def test_dg_list_defs_shows_the_io_manager_the_sensor_and_the_checks_of_every_asset(root):
    listed = run_tool(root, tool("dg"), "list", "defs", "--json")
    assert listed.returncode == 0, listed.stderr
    defs = json.loads(listed.stdout)
    assert [entry["name"] for entry in defs["sensors"]] == [
        "ubunye_drift_sensor",
        "ubunye_failed_steps_sensor",
    ]
    assert "io_manager" in [entry["name"] for entry in defs["resources"]]
    checks = {entry["key"] for entry in defs["asset_checks"]}
    assert checks == {
        "orders:ubunye_reproducible",
        "revenue:ubunye_reproducible",
        "feed:ubunye_reproducible",
        "orders:amount_not_negative",
    }


def copy_of_project(root: Path, into: Path) -> Path:
    """A copy of the project in ``into`` (``run_tool(into, ..., cwd=copy)`` gives it its own
    Dagster instance, ``into/dagster_home``)."""
    copy = into / "shop"
    shutil.copytree(project_of(root), copy)
    return copy


@pytest.fixture(scope="module")
def launched_with_feed_down(root, tmp_path_factory) -> tuple[Path, object]:
    """``dg launch --assets '*'`` on a copy of the project, ``feed`` failing before it returns
    (``orders`` and ``revenue`` do not read it): the copy's root (its Dagster home inside) and
    the completed process."""
    into = tmp_path_factory.mktemp("feed_down")
    copy = copy_of_project(root, into)
    launched = run_tool(into, tool("dg"), "launch", "--assets", "*", cwd=copy, **{FEED_DOWN: "1"})
    return into, launched


def test_dg_launch_keeps_receipts_records_metadata_data_versions_and_verified_reads(
    launched_with_feed_down,
):
    into, launched = launched_with_feed_down
    store = LineageStore.for_usecase_dir(into / "shop")
    found = {name: store.list_runs(f"dagster/sales/{name}") for name in ("orders", "revenue")}
    assert [len(runs) for runs in found.values()] == [1, 1], launched.stderr[-3000:]
    [orders], [revenue] = found["orders"], found["revenue"]
    assert orders.status == revenue.status == "success"
    assert [(e["rule"], e["passed"]) for e in orders.expectations] == [
        ("amount_not_negative", True)
    ]
    [read] = revenue.inputs
    assert read.name == "orders" and read.data_hash == orders.outputs[0].data_hash
    assert read.source_note.startswith("verified:")
    with dg.DagsterInstance.from_config(str(into / "dagster_home")) as instance:
        [event] = instance.fetch_materializations(dg.AssetKey("revenue"), limit=1).records
    materialisation = event.asset_materialization
    metadata = {key: value.value for key, value in materialisation.metadata.items()}
    assert metadata[DATA_HASH] == revenue.outputs[0].data_hash
    assert materialisation.tags["dagster/data_version"] == revenue.outputs[0].data_hash
    assert Path(metadata[RECORD_PATH]).is_file()
    assert metadata[SUMMARY].startswith("**")


def test_a_step_failing_before_the_io_manager_under_dg_launch_leaves_its_error_record(
    launched_with_feed_down,
):
    into, launched = launched_with_feed_down
    assert launched.returncode != 0

    [record] = LineageStore.for_usecase_dir(into / "shop").list_runs("dagster/intake/feed")
    assert record.status == "error"
    assert record.error == "ConnectionError: cannot reach https://api.example.com?api_key=***"
    assert [t["step"] for t in record.timings] == ["Transform:feed"]
    assert record.code_hash is not None and record.ended_at is not None


def test_the_components_checks_with_a_failing_asset_in_a_dg_launch_run(launched_with_feed_down):
    into, launched = launched_with_feed_down
    assert launched.returncode != 0

    with dg.DagsterInstance.from_config(str(into / "dagster_home")) as instance:
        [run] = instance.get_runs()
        verdicts = reproducibility_verdicts(instance, run.run_id)
        started = step_processes(instance, run.run_id)
    # Each asset that materialised has its verdict, given in its own step's process; the failed
    # asset has none, and no step ran for the checks.
    assert set(verdicts) == {"orders", "revenue"}
    for asset, (step_key, pid, verdict) in verdicts.items():
        assert step_key == asset and pid == started[asset]
        assert verdict == "not judged"  # the first materialisation in this Dagster instance
    assert set(started) == {"orders", "revenue", "feed", "ubunye_expectations_orders"}


def reproducibility_verdicts(
    instance: dg.DagsterInstance, run_id: str
) -> dict[str, tuple[str, int, str]]:
    """``{asset: (step key, process id, verdict)}`` of the run's ``ubunye_reproducible``
    evaluations."""
    found = {}
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION):
        evaluation = entry.dagster_event.event_specific_data
        if evaluation.check_name == CHECK_NAME:
            verdict = evaluation.metadata["ubunye/verdict"].value
            key = evaluation.asset_key.to_user_string()
            assert key not in found, f"two verdicts for {key}"
            found[key] = (entry.step_key, entry.dagster_event.pid, verdict)
    return found


def step_processes(instance: dg.DagsterInstance, run_id: str) -> dict[str, int]:
    """``{step key: process id}`` of each step the run started."""
    events = instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_START)
    return {entry.step_key: entry.dagster_event.pid for entry in events}


@pytest.fixture(scope="module")
def yaml_check_of_bad_attributes(root, tmp_path_factory):
    """``dg check yaml`` on a copy of the project whose ``defs.yaml`` has an unknown attribute
    and choices (one in the drift sensor's settings) with values they do not offer."""
    into = tmp_path_factory.mktemp("bad_yaml")
    copy = copy_of_project(root, into)
    receipts_yaml(copy).write_text(
        f"type: {COMPONENT_TYPE}\n\nattributes:\n  base_pth: lake\n  verify_reads: warning\n"
        "  drift_sensor: {default_status: PAUSED}\n",
        encoding="utf-8",
    )
    return run_tool(into, tool("dg"), "check", "yaml", cwd=copy)


def test_dg_check_yaml_refuses_an_unknown_attribute_naming_it(yaml_check_of_bad_attributes):
    checked = yaml_check_of_bad_attributes
    assert checked.returncode != 0
    assert "'base_pth' was unexpected" in checked.stdout + checked.stderr


def test_dg_check_yaml_lists_the_valid_values_of_a_choice(yaml_check_of_bad_attributes):
    checked = yaml_check_of_bad_attributes
    assert checked.returncode != 0
    output = checked.stdout + checked.stderr
    assert "'warning' is not one of ['fail', 'warn', 'off', 'rows']" in output
    assert "'PAUSED' is not one of ['STOPPED', 'RUNNING']" in output  # in drift_sensor's settings


def test_dg_check_defs_stops_at_an_unknown_attribute_before_loading(root, tmp_path):
    copy = copy_of_project(root, tmp_path)
    receipts_yaml(copy).write_text(
        f"type: {COMPONENT_TYPE}\n\nattributes:\n  base_pth: lake\n", encoding="utf-8"
    )
    checked = run_tool(tmp_path, tool("dg"), "check", "defs", cwd=copy)
    output = checked.stdout + checked.stderr
    assert checked.returncode != 0
    assert "'base_pth' was unexpected" in output
    assert "All component YAML validated successfully." not in output


@pytest.fixture
def fresh_project_package():
    """The project's package imported afresh in the test (``fresh_project_modules``)."""
    with fresh_project_modules():
        yield


def test_an_unknown_attribute_is_refused_when_loading_with_the_closest_valid_name(
    root, tmp_path, monkeypatch, fresh_project_package
):
    copy = copy_of_project(root, tmp_path)
    receipts_yaml(copy).write_text(
        f"type: {COMPONENT_TYPE}\n\nattributes:\n  base_pth: lake\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(copy / "src"))
    with pytest.raises(Exception) as refused:
        load_defs_folder(copy)
    assert "has no field 'base_pth' (did you mean 'base_path'?)" in error_chain(refused.value)


def error_chain(error: BaseException | None) -> str:
    """The messages of an exception and of every exception it was raised from."""
    messages = []
    while error is not None:
        messages.append(str(error))
        error = error.__cause__ or error.__context__
    return "\n".join(messages)


def test_on_drift_names_an_import_path_and_a_missing_one_is_refused_naming_it(
    root, tmp_path, monkeypatch
):
    copy = copy_of_project(root, tmp_path)
    # A top-level module: the project's own package may already be imported from `root`.
    (copy / "src" / "shop_alerts.py").write_text(
        "def notify(verdict):\n    print(verdict.summary)\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(copy / "src"))
    monkeypatch.delitem(sys.modules, "shop_alerts", raising=False)
    assert load_with_on_drift(copy, "shop_alerts.notify").sensors
    with pytest.raises(Exception) as refused:
        load_with_on_drift(copy, "shop_alerts.notfy")
    assert "on_drift 'shop_alerts.notfy': 'shop_alerts' has no attribute 'notfy'" in (
        error_chain(refused.value)
    )


def load_with_on_drift(project: Path, path: str) -> dg.Definitions:
    """The project's definitions loaded afresh with the component's ``on_drift: path``."""
    receipts_yaml(project).write_text(
        f"type: {COMPONENT_TYPE}\n\nattributes:\n  on_drift: {path}\n", encoding="utf-8"
    )
    with fresh_project_modules():
        return load_defs_folder(project)


def load_defs_folder(project: Path) -> dg.Definitions:
    """The project's definitions as `dg` loads them (``path_within_project`` replaces the
    deprecated ``project_root`` in newer Dagster)."""
    if "path_within_project" in inspect.signature(dg.load_from_defs_folder).parameters:
        return dg.load_from_defs_folder(path_within_project=project)
    return dg.load_from_defs_folder(project_root=project)


def test_loading_the_component_raises_no_beta_warning(root, monkeypatch):
    project = project_of(root)
    monkeypatch.syspath_prepend(str(project / "src"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        defs = load_defs_folder(project)
        checks = defs.get_repository_def().asset_checks_defs_by_key
    assert dg.AssetCheckKey(dg.AssetKey("orders"), CHECK_NAME) in checks
    assert [str(w.message) for w in caught if issubclass(w.category, dg.BetaWarning)] == []


def test_the_components_definitions_record_an_early_failure_under_materialize_in_process(
    root, tmp_path, monkeypatch
):
    project = project_of(root)
    monkeypatch.syspath_prepend(str(project / "src"))
    monkeypatch.chdir(tmp_path)  # the component's relative usecase_dir and base_path: here
    monkeypatch.setenv(FEED_DOWN, "1")
    defs = load_defs_folder(project)

    result = dg.materialize(
        defs.assets, resources=defs.resources, selection="feed", raise_on_error=False
    )

    assert not result.success
    [record] = LineageStore.for_usecase_dir(tmp_path).list_runs("dagster/intake/feed")
    assert record.run_id == result.run_id and record.status == "error"
    assert record.error == "ConnectionError: cannot reach https://api.example.com?api_key=***"
