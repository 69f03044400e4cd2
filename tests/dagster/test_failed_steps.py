"""A step killed outright leaves its record ``running``; once Dagster has failed the run, the
failed-steps sensor makes it ``error`` with Dagster's failure text, keeping what it held. Real
runs on the multiprocess executor, a step process killed with SIGKILL."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
from dagster._core.definitions.reconstruct import ReconstructableJob
from sample_records import sample_record

from ubunye_core.records.model import RunRecord
from ubunye_core.store import LineageStore
from ubunye_dagster import UbunyeIOManager, UbunyeResource, with_ubunye
from ubunye_dagster.receipts.failed_steps import SENSOR_NAME, build_failed_steps_sensor

#: The oldest supported Dagster runs this whole module (the smoke set, .ci/run).
pytestmark = pytest.mark.smoke


@dg.asset
def ledger() -> pd.DataFrame:
    return pd.DataFrame({"account": ["a", "b"], "amount": [10.0, -3.5]})


@dg.asset
def doomed(ledger: pd.DataFrame) -> pd.DataFrame:
    # What the out-of-memory killer does: the process ends with no word to anyone.
    os.kill(os.getpid(), signal.SIGKILL)
    return ledger


def resource(root: Path) -> UbunyeResource:
    return UbunyeResource(usecase_dir=str(root))


def killed_job() -> dg.JobDefinition:
    """ledger -> doomed on Dagster's multiprocess executor (each step in its own process)."""
    root = Path(os.environ["UBUNYE_TEST_ROOT"])
    manager = UbunyeIOManager(base_path=str(root / "data"), ubunye=resource(root))
    defs = dg.Definitions(
        assets=[ledger, doomed],
        jobs=[dg.define_asset_job("killed", executor_def=dg.multiprocess_executor)],
        resources={"io_manager": manager},
    )
    return defs.resolve_job_def("killed")


def record_of(root: Path, asset: str) -> RunRecord:
    [record] = LineageStore.for_usecase_dir(root).list_runs(f"dagster/default/{asset}")
    return record


def tick(root: Path, instance: dg.DagsterInstance) -> None:
    sensor = build_failed_steps_sensor(resource(root))
    sensor.evaluate_tick(dg.build_sensor_context(instance=instance))


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """One run whose ``doomed`` step was killed after loading its input; the instance kept."""
    root = tmp_path_factory.mktemp("killed")
    home = root / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("UBUNYE_TEST_ROOT", str(root))
        with dg.instance_for_test(temp_dir=str(home)) as instance:
            job = ReconstructableJob.for_file(__file__, "killed_job")
            result = dg.execute_job(job, instance=instance)
            yield root, instance, result


def test_a_killed_steps_record_is_left_running_until_dagster_has_failed_it(killed):
    root, _, result = killed
    assert not result.success
    assert record_of(root, "doomed").status == "running"


def test_the_sensor_makes_it_error_with_dagsters_failure_text_keeping_what_it_held(killed):
    root, instance, _ = killed
    before = record_of(root, "doomed")
    tick(root, instance)
    after = record_of(root, "doomed")

    assert after.status == "error"
    assert after.error.startswith("ChildProcessCrashException: Multiprocess executor: ")
    assert "doomed was terminated by signal 9 (SIGKILL)" in after.error
    assert [step.name for step in after.inputs] == ["ledger"] == [s.name for s in before.inputs]
    unchanged = after.model_dump(exclude={"status", "error"})
    assert unchanged == before.model_dump(exclude={"status", "error"})


def test_the_index_no_longer_lists_it_as_running(killed):
    root, instance, _ = killed
    tick(root, instance)
    store = LineageStore.for_usecase_dir(root)
    assert store.search("dagster", status="running") == []
    assert [r.task_name for r in store.search("dagster", status="error")] == ["doomed"]


def test_a_successful_record_is_never_touched_and_a_second_tick_changes_nothing(killed):
    root, instance, _ = killed
    tick(root, instance)
    ok, closed = record_of(root, "ledger"), record_of(root, "doomed")
    tick(root, instance)
    assert ok.status == "success" and record_of(root, "ledger") == ok
    assert record_of(root, "doomed") == closed


def test_a_record_whose_run_is_still_going_is_left_alone(tmp_path):
    place = resource(tmp_path)
    with dg.instance_for_test() as instance:
        run = instance.create_run_for_job(
            dg.Definitions(assets=[ledger]).resolve_implicit_global_asset_job_def()
        )
        instance.handle_run_event(
            run.run_id,
            dg.DagsterEvent(
                event_type_value=dg.DagsterEventType.RUN_START.value, job_name=run.job_name
            ),
        )
        record = sample_record(
            run.run_id,
            "dagster/default/ledger",
            started_at="2026-12-05T12:00:00.000000Z",
            status="running",
            variables={"asset_key": "ledger"},
        )
        place.store().save(record)
        tick(tmp_path, instance)
    assert record_of(tmp_path, "ledger").status == "running"


def test_with_ubunye_adopts_the_sensor(tmp_path):
    defs = with_ubunye(dg.Definitions(assets=[ledger]), usecase_dir=str(tmp_path))
    assert SENSOR_NAME in {sensor.name for sensor in defs.sensors}
