"""End to end through the real Dagster UI server: one `dagster dev` on loopback, its workspace
holding four code locations, a run of each launched through GraphQL at once.

- The example project (`workspace.yaml`'s location): the receipt the UI serves for an asset of
  its main job's run must be the one in the run record file and the one the reference CLI reads
  from it; the daemon ticks its drift sensor; its expectations are checks of that run.
- Both ways to adopt, a Definitions adopted in one line (`tests/locations/adopted_in_one_line.py`)
  and the `dg` component in a `create-dagster` project (Dagster 1.11+), keep receipts, the
  summary entry, and the `error` record of a step that fails before it touches the IO manager.
- A plain Definitions with `with_error_records` (`tests/locations/failing_before_io.py`): its
  step failing before it touches the IO manager still leaves its `error` record (the run worker
  runs the failure hook).

One server serves them all: each location has its own code server and each run its own run
worker, as with one server each, and a `dagster dev` takes a minute to start on two cores.
The example and the two plain locations share one home (``UBUNYE_EXAMPLE_HOME``, the variable
they read); the plain ones write the same task path, so their records are told apart by run id.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from components_project import (
    COMPONENT_TYPE,
    FEED_DOWN,
    HAS_COMPONENTS,
    NEEDS_COMPONENTS_DAGSTER,
    PROJECT,
    copy_project,
    receipts_yaml,
)
from reference_cli import reference_cli

from example_project.definitions import DRIFT_SENSOR, MAIN_JOB, USECASE
from example_project.run import DAYS
from example_project.webserver import LOCATION, REPO_ROOT, DagsterDev
from ubunye_core.store import LineageStore
from ubunye_dagster import CHECK_NAME
from ubunye_dagster.receipts.metadata import SUMMARY

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

#: The asset read back through the UI, and where its record must be (identity mapping).
ASSET = ["sales", "order_lines"]
GROUP = "sales"
TASK = "sales.order_lines"

LOCATIONS_DIR = Path(__file__).resolve().parents[1] / "locations"
ONE_LINE = "one_line"
FAILING = "failing_before_io"
ASSET_JOB = "__ASSET_JOB"
#: The multiprocess executor of the locations that keep Dagster's default executor, its step
#: processes forked from a server that imported Dagster, pandas and the glue once (a spawned step
#: imports them again: about 4 s of CPU each on two cores).
FORKED_STEPS = {
    "execution": {
        "config": {
            "multiprocess": {
                "start_method": {
                    "forkserver": {"preload_modules": ["dagster", "pandas", "ubunye_dagster"]}
                }
            }
        }
    }
}
#: The task path both plain locations' failing asset writes its `error` record to.
UNREACHABLE_TASK = "dagster/intake/unreachable_source"


def workspace_entry(target: str, location: str, working_directory: Path) -> str:
    """One `load_from` entry of a workspace.yaml."""
    return (
        f"  - {target}\n      working_directory: {working_directory}\n"
        f"      location_name: {location}\n"
    )


@dataclass
class Served:
    """The server, its homes, and each location's load error (None: loaded), run id and final
    status."""

    server: DagsterDev
    example_home: Path
    shop_home: Path
    load_errors: dict[str, str | None]
    run_ids: dict[str, str]
    statuses: dict[str, str]

    def run(self, location: str) -> tuple[str, str]:
        """The run id and final status of ``location``'s run (which must have loaded)."""
        error = self.load_errors[location]
        assert error is None, f"code location {location} failed to load: {error}"
        return self.run_ids[location], self.statuses[location]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, request) -> Iterator[Served]:
    """dagster dev on 127.0.0.1 with a temporary DAGSTER_HOME and every location; one run of
    each launched at once, each waited for."""
    root = tmp_path_factory.mktemp("e2e")
    entries = {
        LOCATION: workspace_entry(
            f"python_module:\n      module_name: {LOCATION}", LOCATION, REPO_ROOT
        ),
        ONE_LINE: workspace_entry(
            f"python_file:\n      relative_path: {LOCATIONS_DIR / 'adopted_in_one_line.py'}",
            ONE_LINE,
            REPO_ROOT,
        ),
        FAILING: workspace_entry(
            f"python_file:\n      relative_path: {LOCATIONS_DIR / 'failing_before_io.py'}",
            FAILING,
            REPO_ROOT,
        ),
    }
    jobs: dict[str, tuple[str, dict[str, str], dict[str, Any]]] = {
        LOCATION: (MAIN_JOB, {"dagster/partition": DAYS[0]}, {}),
        ONE_LINE: ("everything", {}, FORKED_STEPS),
        FAILING: ("unreachable_job", {}, FORKED_STEPS),
    }
    env: dict[str, str] = {}
    shop_home = root / "shop_home"
    if HAS_COMPONENTS:
        (root / "component").mkdir()
        project = copy_project(request.getfixturevalue("components_project"), root / "component")
        receipts_yaml(project).write_text(
            f"type: {COMPONENT_TYPE}\n\nattributes:\n  base_path: {shop_home / 'data'}\n"
            f"  usecase_dir: {shop_home}\n",
            encoding="utf-8",
        )
        src = project / "src"
        entries[PROJECT] = workspace_entry(
            f"python_module:\n      module_name: {PROJECT}.definitions", PROJECT, src
        )
        jobs[PROJECT] = (ASSET_JOB, {}, FORKED_STEPS)
        # Only the component's `feed` asset reads it: it fails before it returns anything.
        env[FEED_DOWN] = "1"
        path = [str(src), str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(part for part in path if part)
    workspace = root / "workspace.yaml"
    workspace.write_text("load_from:\n" + "".join(entries.values()), encoding="utf-8")
    example_home = root / "example"
    with DagsterDev(root / "dagster_home", example_home, workspace=workspace, env=env) as server:
        load_errors = server.wait_until_loaded(list(entries), timeout=300)
        run_ids = {
            location: server.launch_run(job, tags, location=location, run_config=config)
            for location, (job, tags, config) in jobs.items()
            if load_errors[location] is None
        }
        statuses = {
            location: server.wait_for_run(run_id, timeout=300)
            for location, run_id in run_ids.items()
        }
        yield Served(server, example_home, shop_home, load_errors, run_ids, statuses)


@pytest.fixture(scope="module")
def served_run(served: Served) -> dict[str, Any]:
    """The example's main-job run: its id, status, home and the asset's latest materialisation."""
    run_id, status = served.run(LOCATION)
    return {
        "server": served.server,
        "run_id": run_id,
        "status": status,
        "example_home": served.example_home,
        "latest": served.server.latest_materialisation(ASSET) if status == "SUCCESS" else None,
    }


def error_record(home: Path, task_path: str, run_id: str):
    """The one record of ``run_id`` under ``task_path``, which must be an `error` record."""
    store = LineageStore.for_usecase_dir(home)
    [failed] = [record for record in store.list_runs(task_path) if record.run_id == run_id]
    assert failed.status == "error"
    return failed


MASKED_ERROR = "ConnectionError: cannot reach https://api.example.com?api_key=***"


# The example project.


def test_a_run_launched_through_graphql_succeeds(served_run: dict[str, Any]) -> None:
    assert served_run["status"] == "SUCCESS", served_run["server"].log_tail()
    assert served_run["latest"]["run_id"] == served_run["run_id"]


def test_the_ui_data_hash_is_the_record_files(served_run: dict[str, Any]) -> None:
    metadata = served_run["latest"]["metadata"]
    record_file = (
        served_run["example_home"]
        / ".ubunye"
        / "lineage"
        / USECASE
        / GROUP
        / TASK
        / f"{served_run['run_id']}.json"
    )
    record = json.loads(record_file.read_text(encoding="utf-8"))
    (output,) = record["outputs"]
    assert metadata["ubunye/data_hash"].startswith("sha256:")
    assert metadata["ubunye/data_hash"] == output["data_hash"]
    assert metadata["ubunye/schema_hash"] == output["schema_hash"]
    assert metadata["dagster/row_count"] == output["row_count"]
    assert Path(metadata["ubunye/record_path"]).resolve() == record_file.resolve()


def test_the_ui_data_hash_is_what_the_reference_cli_traces(served_run: dict[str, Any]) -> None:
    command = [
        reference_cli(),
        "lineage",
        "trace",
        "-d",
        str(served_run["example_home"]),
        "-u",
        USECASE,
        "-p",
        GROUP,
        "-t",
        TASK,
        "--run-id",
        served_run["run_id"],
        "--json",
    ]
    traced = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)
    document = json.loads(traced.stdout)
    (output,) = document["outputs"]
    assert document["run_id"] == served_run["run_id"]
    assert output["data_hash"] == served_run["latest"]["metadata"]["ubunye/data_hash"]


def test_the_daemon_ticks_the_drift_sensor_and_it_judges_the_run(
    served_run: dict[str, Any],
) -> None:
    server = served_run["server"]
    deadline = time.monotonic() + 120
    judged = None
    while judged is None and time.monotonic() < deadline:
        execution = server.check_for_latest_materialisation(ASSET, CHECK_NAME)
        evaluation = (execution or {}).get("evaluation") or {}
        target = evaluation.get("targetMaterialization") or {}
        if target.get("runId") == served_run["run_id"]:
            judged = evaluation
        else:
            time.sleep(1)
    state = server.sensor_ticks(DRIFT_SENSOR)
    assert judged is not None, f"sensor state: {state}\n{server.log_tail()}"
    assert state["status"] == "RUNNING"
    assert state["ticks"], "the daemon never ticked the drift sensor"
    # A first materialisation has nothing to be compared with, so nothing is flagged.
    assert judged["success"] is True


def test_the_expectations_are_checks_evaluated_in_the_run_with_their_counts(
    served_run: dict[str, Any],
) -> None:
    state = served_run["server"].asset_state(ASSET)["assetNodeOrError"]
    checks = {c["name"]: c for c in state["assetChecksOrError"]["checks"]}
    rows = served_run["latest"]["metadata"]["dagster/row_count"]
    for name in ("order_id_not_null", "order_id_unique", "quantity_between", "row_count"):
        execution = checks[name]["executionForLatestMaterialization"]
        assert checks[name]["blocking"], name  # severity fail: a blocking check
        assert execution["runId"] == served_run["run_id"], name
        assert execution["status"] == "SUCCEEDED", name
        counts = {e["label"]: e.get("intValue") for e in execution["evaluation"]["metadataEntries"]}
        assert counts["total"] == rows and counts["failed"] == 0, name


# Both ways to adopt.


def test_a_definitions_adopted_in_one_line_keeps_receipts_and_early_failures_under_dagster_dev(
    served: Served,
) -> None:
    run_id, status = served.run(ONE_LINE)
    assert status == "FAILURE", served.server.log_tail()
    assert error_record(served.example_home, UNREACHABLE_TASK, run_id).error == MASKED_ERROR
    balance = served.server.latest_materialisation(["balance"])
    assert balance["run_id"] == run_id
    assert balance["metadata"][SUMMARY].startswith("**Not compared**")


@NEEDS_COMPONENTS_DAGSTER
def test_the_component_keeps_receipts_and_early_failures_under_dagster_dev(
    served: Served,
) -> None:
    run_id, status = served.run(PROJECT)
    assert status == "FAILURE", served.server.log_tail()
    assert error_record(served.shop_home, "dagster/intake/feed", run_id).error == MASKED_ERROR
    [recorded] = LineageStore.for_usecase_dir(served.shop_home).list_runs("dagster/sales/revenue")
    assert recorded.status == "success" and recorded.inputs[0].source_note.startswith("verified:")
    revenue = served.server.latest_materialisation(["revenue"])
    assert revenue["run_id"] == run_id and SUMMARY in revenue["metadata"]


# A plain Definitions with the failure hook.


def test_a_step_failing_before_touching_the_io_manager_under_dagster_dev_is_recorded(
    served: Served,
) -> None:
    run_id, status = served.run(FAILING)
    assert status == "FAILURE", served.server.log_tail()
    record = error_record(served.example_home, UNREACHABLE_TASK, run_id)
    assert record.error.startswith("ConnectionError: cannot reach")
    assert "abc123secret" not in record.error
    assert [t["step"] for t in record.timings] == ["Transform:unreachable_source"]
    assert record.code_hash is not None and record.ended_at is not None
