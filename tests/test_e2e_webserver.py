"""End to end through the real Dagster UI server: `dagster dev -w workspace.yaml` on loopback.

A run of the example's main job is launched through GraphQL; the receipt the UI serves for an
asset must be the one in the run record file and the one the reference CLI reads from it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from example_project.definitions import DRIFT_SENSOR, MAIN_JOB, USECASE
from example_project.run import DAYS
from example_project.webserver import DagsterDev
from ubunye_dagster import CHECK_NAME

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

#: The asset read back through the UI, and where its record must be (identity mapping).
ASSET = ["sales", "order_lines"]
GROUP = "sales"
TASK = "sales.order_lines"


def reference_cli() -> str:
    """The reference implementation's `ubunye` console script, next to this Python first."""
    beside = Path(sys.executable).with_name("ubunye")
    found = str(beside) if beside.exists() else shutil.which("ubunye")
    assert found, "the reference CLI `ubunye` (ubunye-engine, a dev dependency) is not installed"
    return found


@pytest.fixture(scope="module")
def served_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """dagster dev on 127.0.0.1 with a temporary DAGSTER_HOME; one successful main-job run."""
    root = tmp_path_factory.mktemp("e2e")
    example_home = root / "example"
    with DagsterDev(root / "dagster_home", example_home) as server:
        server.wait_until_ready(timeout=120)
        run_id = server.launch_run(MAIN_JOB, {"dagster/partition": DAYS[0]})
        status = server.wait_for_run(run_id, timeout=150)
        yield {
            "server": server,
            "run_id": run_id,
            "status": status,
            "example_home": example_home,
            "latest": server.latest_materialisation(ASSET) if status == "SUCCESS" else None,
        }


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
            time.sleep(2)
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
