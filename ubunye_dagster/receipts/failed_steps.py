"""Records a killed step left ``running``, closed once Dagster has failed its run.

A step process killed outright (SIGKILL, the out-of-memory killer, a lost node) writes nothing
more: its record stays ``running`` while Dagster fails the step and the run. The sensor built
here finds, on each tick, the store's ``running`` records whose Dagster run has ended in failure
or cancellation, and makes each ``error`` with Dagster's failure text for its step (credentials
masked); the inputs, timings and everything else it held stay as they were. A record whose run
is still going, or that the instance does not know, is left alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import dagster as dg

from ubunye_core.records.model import RunRecord
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.receipts.early_failures import user_error_text
from ubunye_dagster.receipts.masking import mask_text
from ubunye_dagster.receipts.records import RecordPlace

#: The sensor's default name.
SENSOR_NAME = "ubunye_failed_steps_sensor"
#: The run statuses after which no step of the run writes its record any more.
ENDED_UNFINISHED = (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)


def _step_failures(instance: dg.DagsterInstance, run_id: str) -> dict[str, str]:
    """``{step key: "<Type>: <message>"}`` of each step Dagster failed in the run. Where the
    executor explained the failure in an engine event (a crashed step process: "terminated by
    signal 9"), its explanation is the message; else the failure's own error's."""
    failed: dict[str, str] = {}
    explained: dict[str, str] = {}
    kinds = {dg.DagsterEventType.STEP_FAILURE, dg.DagsterEventType.ENGINE_EVENT}
    for entry in instance.all_logs(run_id, of_type=kinds):
        event = entry.dagster_event
        error = getattr(event.event_specific_data, "error", None) if event else None
        if error is None or entry.step_key is None:
            continue
        if event.event_type == dg.DagsterEventType.ENGINE_EVENT:
            explained.setdefault(entry.step_key, f"{error.cls_name}: {event.message}")
        else:
            failed.setdefault(entry.step_key, f"{error.cls_name}: {user_error_text(error)}")
    return {step: explained.get(step, text) for step, text in failed.items()}


def _failure_texts(instance: dg.DagsterInstance, run_id: str) -> dict[str, str]:
    """``{asset key: "<Type>: <message>"}`` of each asset whose step Dagster failed in the run."""
    texts = {}
    for step_key, text in _step_failures(instance, run_id).items():
        for asset_key, _ in internals.planned_assets(instance, run_id, step_key):
            texts.setdefault(asset_key.to_user_string(), text)
    return texts


def _run_text(run: dg.DagsterRun) -> str:
    """What to say of a record whose own step Dagster reported no failure for."""
    ended = "was canceled" if run.status == dg.DagsterRunStatus.CANCELED else "failed"
    return f"DagsterRunEnded: the Dagster run {ended} before this step finished its record"


def close_records_of_ended_runs(
    instance: dg.DagsterInstance, records: Iterable[RunRecord]
) -> list[RunRecord]:
    """Each ``running`` record among ``records`` whose Dagster run failed or was canceled, made
    ``error`` with the failure text of its step (the run's when its step has none)."""
    closed = []
    texts: dict[str, dict[str, str]] = {}
    for record in records:
        run = instance.get_run_by_id(record.run_id) if record.status == "running" else None
        if run is None or run.status not in ENDED_UNFINISHED:
            continue
        if record.run_id not in texts:
            texts[record.run_id] = _failure_texts(instance, record.run_id)
        asset_key = str((record.variables or {}).get("asset_key") or "")
        text = texts[record.run_id].get(asset_key) or _run_text(run)
        closed.append(record.model_copy(update={"status": "error", "error": mask_text(text)}))
    return closed


def build_failed_steps_sensor(
    ubunye: RecordPlace,
    *,
    name: str = SENSOR_NAME,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.RUNNING,
) -> dg.SensorDefinition:
    """A sensor that closes, as ``error``, the ``running`` records under ``ubunye``'s store (its
    usecase) whose Dagster run failed or was canceled: steps killed before they could."""

    @dg.sensor(
        name=name,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=(
            "Closes as error the run records left running by steps Dagster failed "
            "(a killed step process), with Dagster's failure text."
        ),
    )
    def _close(context: dg.SensorEvaluationContext) -> dg.SkipReason:
        store = ubunye.store()
        running = store.search(ubunye.usecase, status="running")
        closed = close_records_of_ended_runs(context.instance, running)
        for record in closed:
            store.save(record)
            context.log.info(f"ubunye: {record.task_path}/{record.run_id} closed as error")
        return dg.SkipReason(_summary(len(running), closed))

    return _close


def _summary(running: int, closed: list[Any]) -> str:
    if not closed:
        return f"{running} record(s) running, none of an ended run"
    return f"{len(closed)} of {running} running record(s) closed as error: their runs ended"
