"""``error`` records for steps that fail before they touch the IO manager.

Such a step never calls the IO manager, so its record is built from the asset definition, the
run and the step's events. Two channels save it, and both end in :func:`save_error_records`:

- a failure hook on the asset definition (``with_error_records``, ``with_ubunye``), which gets
  the user's own exception;
- the ``UbunyeIOManager``'s teardown (:func:`record_early_failures`), for asset definitions that
  cannot be given a hook (those of other components in a ``dg`` project). Dagster starts the IO
  manager of a step whether or not the step reaches it and tears it down after the step's
  failure event is stored, in the process that ran the step. The definitions are remembered
  when they load (:func:`watch_early_failures`), which happens in every process that runs steps.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import dagster as dg

from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.receipts import subjects
from ubunye_dagster.receipts.masking import mask_text
from ubunye_dagster.receipts.records import RecordPlace, close_record
from ubunye_dagster.receipts.session import StepSession, session_of

#: Dagster's wrappers around the user's exception in a step failure's error chain.
_DAGSTER_WRAPPERS = ("DagsterExecutionStepExecutionError", "DagsterUserCodeExecutionError")


def save_error_records(
    instance: dg.DagsterInstance,
    run_id: str,
    step_key: str,
    assets_def: dg.AssetsDefinition,
    *,
    place_for: Callable[[dg.AssetKey], RecordPlace | None],
    op_config: Any,
    error: BaseException | str | None,
) -> list[str]:
    """Save an ``error`` record for each asset the failed step was to materialise and has no
    record of yet: the error (masked), the step's start, end and transform timing. Returns the
    paths saved; records the step opened are closed by the IO manager's teardown."""
    run = instance.get_run_by_id(run_id)
    started, ended = internals.step_times(instance, run_id, step_key)
    session = session_of(run_id, step_key) or StepSession(
        run_id, step_key, started_epoch=started or time.time()
    )
    saved: list[str] = []
    for key, partition_key in internals.planned_assets(instance, run_id, step_key):
        place = place_for(key) if key in assets_def.keys else None
        if run is None or place is None:
            continue
        facts = internals.AssetFacts.of_definition(assets_def, key)
        if facts.partitions_def is not None and partition_key is None:
            continue  # a range of partitions in one run: refused when written, nothing to keep
        subject = subjects.asset_subject(
            run=run,
            step_key=step_key,
            asset_key=key,
            facts=facts,
            partition_key=partition_key,
            op_def=assets_def.op,
            op_config=op_config,
        )
        if session.has_record(subject, place):
            continue  # the step opened this record: closed at resource teardown
        open_record = session.record(subject, place, output_name=None)
        open_record.closed = True
        if open_record.saved():
            continue  # recorded already in this run
        session.fill(
            open_record,
            session.inputs_of(None),
            extra_timings=[session.transform_timing(assets_def.op.name, until=ended)],
        )
        close_record(open_record.record, "error", error, ended_epoch=ended)
        saved.append(open_record.save())
    return saved


@dataclass(frozen=True)
class _Watched:
    assets_def: dg.AssetsDefinition
    io_manager_key: str
    #: The record settings of the IO manager that stores these assets (UbunyeResource fields).
    place_settings: str


_WATCHED: dict[str, _Watched] = {}
_WATCHED_LOCK = threading.Lock()


def watch_early_failures(
    assets: Iterable[Any], *, place_settings: str, io_manager_key: str = "io_manager"
) -> list[dg.AssetKey]:
    """Remember the executable asset definitions stored under ``io_manager_key``, so the teardown
    of the IO manager with these record settings (``UbunyeResource.model_dump_json()``) records
    their early failures; returns the keys watched."""
    watched: list[dg.AssetKey] = []
    for item in assets:
        if not (isinstance(item, dg.AssetsDefinition) and item.is_executable):
            continue
        keys = [k for k in item.keys if internals.io_manager_key_of(item, k) == io_manager_key]
        if keys:
            with _WATCHED_LOCK:
                _WATCHED[item.node_def.name] = _Watched(item, io_manager_key, place_settings)
            watched.extend(keys)
    return watched


def forget_watched() -> None:
    """Watch no asset definition any more (the teardown channel then reads no event)."""
    with _WATCHED_LOCK:
        _WATCHED.clear()


def user_error_text(error: Any) -> str:
    """``"<Type>: <message>"`` of the user's exception in a step failure's error chain (Dagster's
    wrappers removed), credentials masked."""
    while error.cause is not None and error.cls_name in _DAGSTER_WRAPPERS:
        error = error.cause
    return mask_text(str(error.message).strip())


def _failures_in_this_process(instance: dg.DagsterInstance, run_id: str) -> list[Any]:
    """The step failure events of the run that this process emitted (a step's own process under
    the multiprocess executor; every step in-process)."""
    events = instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE)
    pid = os.getpid()
    return [e for e in events if e.dagster_event is not None and e.dagster_event.pid == pid]


def record_early_failures(
    instance: dg.DagsterInstance | None, run: dg.DagsterRun, place: RecordPlace, settings: str
) -> list[str]:
    """Save the ``error`` records of this run's watched steps that failed in this process
    without a record; ``place`` and ``settings`` are those of the IO manager tearing down."""
    with _WATCHED_LOCK:
        watched = dict(_WATCHED)
    if instance is None or not watched:
        return []
    saved: list[str] = []
    for entry in _failures_in_this_process(instance, run.run_id):
        found = watched.get(entry.step_key.split("[")[0].split(".")[0])
        if found is None or found.place_settings != settings:
            continue
        assets_def = found.assets_def
        ops_config = (run.run_config or {}).get("ops", {}).get(assets_def.node_def.name, {})
        saved += save_error_records(
            instance,
            run.run_id,
            entry.step_key,
            assets_def,
            place_for=lambda key, f=found: _place_if_stored(f, key, place),
            op_config=ops_config.get("config") if isinstance(ops_config, dict) else None,
            error=user_error_text(entry.dagster_event.event_specific_data.error),
        )
    return saved


def _place_if_stored(watched: _Watched, key: dg.AssetKey, place: RecordPlace) -> RecordPlace | None:
    stored_here = internals.io_manager_key_of(watched.assets_def, key) == watched.io_manager_key
    return place if stored_here else None
