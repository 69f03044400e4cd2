"""End to end through `dagster dev`: a run launched through GraphQL whose step fails before it
touches the IO manager still leaves its `error` record (the run worker runs the failure hook)."""

from __future__ import annotations

from pathlib import Path

import pytest

from example_project.webserver import REPO_ROOT, DagsterDev
from ubunye_core.store import LineageStore

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

LOCATION_FILE = Path(__file__).resolve().parent / "locations" / "failing_before_io.py"


def test_a_step_failing_before_touching_the_io_manager_under_dagster_dev_is_recorded(tmp_path):
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(
        "load_from:\n"
        "  - python_file:\n"
        f"      relative_path: {LOCATION_FILE}\n"
        f"      working_directory: {REPO_ROOT}\n"
        "      location_name: failing_before_io\n",
        encoding="utf-8",
    )
    home = tmp_path / "home"
    with DagsterDev(
        tmp_path / "dagster_home", home, workspace=workspace, location="failing_before_io"
    ) as server:
        server.wait_until_ready(timeout=120)
        run_id = server.launch_run("unreachable_job")
        status = server.wait_for_run(run_id, timeout=150)
        log = server.log_tail()

    assert status == "FAILURE", log
    [record] = LineageStore.for_usecase_dir(home).list_runs("dagster/intake/unreachable_source")
    assert record.run_id == run_id and record.status == "error"
    assert record.error.startswith("ConnectionError: cannot reach")
    assert "abc123secret" not in record.error
    assert [t["step"] for t in record.timings] == ["Transform:unreachable_source"]
    assert record.code_hash is not None and record.ended_at is not None
