"""One line to adopt: ``with_ubunye(defs, ...)`` on an existing Definitions, and the component's
early-failure channel outside ``dg`` (its definitions loaded in the same process)."""

from __future__ import annotations

import importlib
import random
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
from dagster._core.definitions.reconstruct import ReconstructableJob

from ubunye_core.store import LineageStore
from ubunye_dagster import UbunyeIOManager, with_ubunye
from ubunye_dagster.drift.check_spec import check_settings_of
from ubunye_dagster.drift.hooks import DriftVerdict
from ubunye_dagster.receipts.metadata import DATA_HASH, DETERMINISTIC, SUMMARY
from ubunye_dagster.strict_fields import UnknownSettingError

#: The step of the reproducibility checks (build_reproducibility_checks' default name).
REPRODUCIBILITY_STEP = "ubunye_reproducibility_checks"
LOCATION = Path(__file__).resolve().parents[1] / "locations" / "adopted_in_one_line.py"


def load_location(root: Path, monkeypatch: pytest.MonkeyPatch):
    """The one-line location module loaded anew, its data and records under ``root``."""
    monkeypatch.setenv("UBUNYE_EXAMPLE_HOME", str(root))
    monkeypatch.syspath_prepend(str(LOCATION.parent))
    import adopted_in_one_line

    return importlib.reload(adopted_in_one_line)


@pytest.fixture
def location(tmp_path, monkeypatch):
    """The one-line location module, its data and records under ``tmp_path``."""
    return load_location(tmp_path, monkeypatch)


def records(root: Path, task_path: str):
    return LineageStore.for_usecase_dir(root).list_runs(task_path)


def assert_early_failure_recorded(root: Path, run_id: str) -> None:
    [record] = records(root, "dagster/intake/unreachable_source")
    assert record.run_id == run_id and record.status == "error"
    assert record.error == "ConnectionError: cannot reach https://api.example.com?api_key=***"
    assert [t["step"] for t in record.timings] == ["Transform:unreachable_source"]
    assert record.code_hash is not None and record.ended_at is not None


@pytest.mark.smoke
def test_one_call_adds_the_io_manager_the_sensor_and_the_checks_without_touching_the_assets(
    location,
):
    plain = location.plain_definitions()
    adopted = location.defs

    assert isinstance(adopted.resources["io_manager"], UbunyeIOManager)
    assert [sensor.name for sensor in adopted.sensors] == [
        "ubunye_drift_sensor",
        "ubunye_failed_steps_sensor",
    ]
    checks = {key.to_user_string() for c in adopted.asset_checks for key in c.check_keys}
    assert checks == {
        f"{name}:ubunye_reproducible" for name in ("unreachable_source", "ledger", "balance")
    }
    assert [a.key for a in adopted.assets] == [a.key for a in plain.assets]
    assert [job.name for job in adopted.jobs] == ["everything"]


@pytest.mark.smoke
def test_a_step_failing_before_the_io_manager_is_recorded_under_materialize(location, tmp_path):
    adopted = location.defs
    result = dg.materialize(
        adopted.assets, resources=adopted.resources, selection="*", raise_on_error=False
    )
    assert not result.success
    assert_early_failure_recorded(tmp_path, result.run_id)
    [balance] = records(tmp_path, "dagster/default/balance")
    assert balance.status == "success"


@dataclass(frozen=True)
class ExecutedJob:
    """One run of a job of the one-line location, as the tests of an executor read it."""

    root: Path
    run_id: str
    success: bool
    #: The process of each step that started.
    step_pids: dict[str, int]
    #: The asset of each reproducibility verdict: the step that gave it and that step's process.
    verdicts: dict[str, tuple[str, int]]


@pytest.fixture(
    scope="module",
    params=[pytest.param("in_process_job", marks=pytest.mark.smoke), "multiprocess_job"],
)
def executed(request, tmp_path_factory) -> ExecutedJob:
    """The location's job of one executor run once (its first step fails before it touches the
    IO manager), its data and records in a folder of its own."""
    root = tmp_path_factory.mktemp(request.param)
    with pytest.MonkeyPatch.context() as monkeypatch, dg.instance_for_test() as instance:
        load_location(root, monkeypatch)
        job = ReconstructableJob.for_file(str(LOCATION), request.param)
        result = dg.execute_job(job, instance=instance)
        evaluations = instance.all_logs(
            result.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION
        )
        started = instance.all_logs(result.run_id, of_type=dg.DagsterEventType.STEP_START)
    return ExecutedJob(
        root=root,
        run_id=result.run_id,
        success=result.success,
        step_pids={entry.step_key: entry.dagster_event.pid for entry in started},
        verdicts={
            entry.dagster_event.event_specific_data.asset_key.to_user_string(): (
                entry.step_key,
                entry.dagster_event.pid,
            )
            for entry in evaluations
        },
    )


def test_a_step_failing_before_the_io_manager_is_recorded_under_either_executor(executed):
    assert not executed.success
    assert_early_failure_recorded(executed.root, executed.run_id)
    [balance] = records(executed.root, "dagster/default/balance")
    assert balance.status == "success" and balance.inputs[0].source_note.startswith("verified:")


def test_a_failing_asset_leaves_every_other_assets_reproducibility_verdict_under_either_executor(
    executed,
):
    assert not executed.success
    # Given in each asset's own step (its process under the multiprocess executor); no step ran
    # for the checks, and the failed asset has no verdict.
    pids = executed.step_pids
    assert executed.verdicts == {name: (name, pids[name]) for name in ("ledger", "balance")}
    assert set(pids) == {"unreachable_source", "ledger", "balance"}


def test_the_checks_judge_with_the_drift_sensors_settings(location):
    adopted = with_ubunye(
        location.plain_definitions(),
        drift_sensor={"flag_reasons": ["inputs changed"], "strict_sources": True},
    )
    [checks] = [c for c in adopted.asset_checks if c.node_def.name == REPRODUCIBILITY_STEP]
    for spec in checks.check_specs:
        settings = check_settings_of(spec)
        assert settings is not None
        assert settings.flag_reasons == ("inputs changed",) and settings.strict_sources


@pytest.mark.smoke
def test_every_materialisation_carries_the_receipt_and_its_summary(location, tmp_path):
    adopted = location.defs
    result = adopted.resolve_job_def("everything").execute_in_process(raise_on_error=False)
    [event] = [
        e.materialization
        for e in result.get_asset_materialization_events()
        if e.asset_key == dg.AssetKey("balance")
    ]
    assert DATA_HASH in event.metadata and SUMMARY in event.metadata


def test_an_unknown_setting_is_refused_with_the_closest_valid_name(location):
    with pytest.raises(
        UnknownSettingError,
        match=r"no field 'usecase_dri' \(did you mean 'usecase_dir' or 'usecase'\?\)",
    ):
        with_ubunye(location.plain_definitions(), usecase_dri=".")


def test_another_io_manager_under_the_default_key_is_refused_naming_with_receipts(location):
    plain = dg.Definitions(
        assets=location.plain_definitions().assets,
        resources={"io_manager": dg.FilesystemIOManager()},
    )
    with pytest.raises(ValueError, match=r"FilesystemIOManager under 'io_manager'.*with_receipts"):
        with_ubunye(plain)


def test_adopting_twice_changes_nothing(location):
    again = with_ubunye(location.defs)
    assert [s.name for s in again.sensors] == [s.name for s in location.defs.sensors]
    assert len(again.asset_checks) == len(location.defs.asset_checks)
    assert [len(a.hook_defs) for a in again.assets] == [1, 1, 1]


#: Verdicts handed to `record_verdict`, named by its import path below.
RECORDED: list[DriftVerdict] = []


def record_verdict(verdict: DriftVerdict) -> None:
    RECORDED.append(verdict)


# Declared deterministic: it reads no asset, so otherwise its change would be expected.
@dg.asset(metadata={DETERMINISTIC: True})
def jittered() -> pd.DataFrame:
    return pd.DataFrame({"price": [1.5 + random.random(), 2.0]})


@pytest.mark.parametrize(
    "on_drift", [RECORDED.append, "test_adoption.record_verdict"], ids=["callable", "import path"]
)
@pytest.mark.smoke
def test_with_ubunye_hands_each_flag_to_on_drift(tmp_path, on_drift):
    RECORDED.clear()
    plain = dg.Definitions(assets=[jittered])
    defs = with_ubunye(
        plain, base_path=str(tmp_path / "data"), usecase_dir=str(tmp_path), on_drift=on_drift
    )
    with dg.instance_for_test() as instance:
        runs = [
            dg.materialize(defs.assets, resources=defs.resources, instance=instance).run_id
            for _ in range(2)
        ]
        [sensor] = [s for s in defs.sensors if s.name == "ubunye_drift_sensor"]
        sensor.evaluate_tick(dg.build_sensor_context(instance=instance))

    [verdict] = RECORDED
    assert (verdict.asset_key, verdict.run_id, verdict.previous_run_id) == ("jittered", *runs[::-1])
    assert verdict.outcome == "drift (same inputs)"


def test_on_drift_without_the_drift_sensor_is_refused(location):
    with pytest.raises(
        ValueError, match="on_drift is called by the drift sensor, and drift_sensor"
    ):
        with_ubunye(location.plain_definitions(), drift_sensor=None, on_drift=record_verdict)
