"""End to end through `dagster dev`: both ways to adopt (one line on a Definitions, and the `dg`
component in a `create-dagster` project) keep receipts, the summary entry, and the `error` record
of a step that fails before it touches the IO manager."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from components_project import (
    COMPONENT_TYPE,
    FEED_DOWN,
    NEEDS_COMPONENTS_DAGSTER,
    PROJECT,
    create_project,
    receipts_yaml,
)

from example_project.webserver import REPO_ROOT, DagsterDev
from ubunye_core.store import LineageStore
from ubunye_dagster.metadata import SUMMARY

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

ONE_LINE = Path(__file__).resolve().parent / "locations" / "adopted_in_one_line.py"
ASSET_JOB = "__ASSET_JOB"


def workspace_file(tmp_path: Path, target: str, location: str, working_directory: Path) -> Path:
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(
        f"load_from:\n  - {target}\n      working_directory: {working_directory}\n"
        f"      location_name: {location}\n",
        encoding="utf-8",
    )
    return workspace


def run_failing_job(tmp_path: Path, workspace: Path, location: str, job: str, asset: str):
    """Launch ``job`` under `dagster dev`; its run id, status, the latest materialisation of
    ``asset`` and the log's tail."""
    home = tmp_path / "home"
    with DagsterDev(tmp_path / "dagster_home", home, workspace=workspace, location=location) as dev:
        dev.wait_until_ready(timeout=180)
        run_id = dev.launch_run(job)
        status = dev.wait_for_run(run_id, timeout=240)
        return run_id, status, dev.latest_materialisation([asset]), dev.log_tail()


def assert_error_record(home: Path, task_path: str, run_id: str) -> None:
    [failed] = LineageStore.for_usecase_dir(home).list_runs(task_path)
    assert failed.run_id == run_id and failed.status == "error"
    assert failed.error == "ConnectionError: cannot reach https://api.example.com?api_key=***"


def test_a_definitions_adopted_in_one_line_keeps_receipts_and_early_failures_under_dagster_dev(
    tmp_path,
):
    workspace = workspace_file(
        tmp_path, f"python_file:\n      relative_path: {ONE_LINE}", "one_line", REPO_ROOT
    )
    run_id, status, balance, log = run_failing_job(
        tmp_path, workspace, "one_line", "everything", "balance"
    )

    assert status == "FAILURE", log
    assert_error_record(tmp_path / "home", "dagster/intake/unreachable_source", run_id)
    assert balance["run_id"] == run_id
    assert balance["metadata"][SUMMARY].startswith("**Not compared**")


@NEEDS_COMPONENTS_DAGSTER
def test_the_component_keeps_receipts_and_early_failures_under_dagster_dev(tmp_path, monkeypatch):
    project = create_project(tmp_path)
    home = tmp_path / "home"
    receipts_yaml(project).write_text(
        f"type: {COMPONENT_TYPE}\n\nattributes:\n  base_path: {home / 'data'}\n"
        f"  usecase_dir: {home}\n",
        encoding="utf-8",
    )
    src = project / "src"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(src), str(REPO_ROOT)]))
    monkeypatch.setenv(FEED_DOWN, "1")
    workspace = workspace_file(
        tmp_path, f"python_module:\n      module_name: {PROJECT}.definitions", PROJECT, src
    )
    run_id, status, revenue, log = run_failing_job(
        tmp_path, workspace, PROJECT, ASSET_JOB, "revenue"
    )

    assert status == "FAILURE", log
    assert_error_record(home, "dagster/intake/feed", run_id)
    [recorded] = LineageStore.for_usecase_dir(home).list_runs("dagster/sales/revenue")
    assert recorded.status == "success" and recorded.inputs[0].source_note.startswith("verified:")
    assert revenue["run_id"] == run_id and SUMMARY in revenue["metadata"]
