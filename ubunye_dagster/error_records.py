"""``with_error_records``: an ``error`` record for a step that fails before it loads or returns
anything, through Dagster's public failure hook.

Such a step never calls the IO manager, and Dagster hands a resource's teardown neither the job
nor its steps, so the asset definition carries a ``@dg.failure_hook`` that knows its assets.
The hook gets the user's own exception (``HookContext.op_exception``) and runs in the process
that ran the step, under ``dg.materialize``, the in-process and multiprocess executors and
``dagster dev`` alike.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TypeVar

import dagster as dg

from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.io_manager import UbunyeIOManager
from ubunye_dagster.records import RecordPlace, close_record
from ubunye_dagster.resource import UbunyeResource
from ubunye_dagster.session import StepSession, session_of

Definition = TypeVar("Definition")


def with_error_records(definitions: Iterable[Definition]) -> list[Definition]:
    """The same asset definitions, each executable one with the failure hook that saves an
    ``error`` record when its step fails before touching the IO manager (specs, source assets
    and checks pass through unchanged)."""
    return [
        _with_failure_hook(d) if isinstance(d, dg.AssetsDefinition) and d.is_executable else d
        for d in definitions
    ]


def _with_failure_hook(assets_def: dg.AssetsDefinition) -> dg.AssetsDefinition:
    @dg.failure_hook(
        name=f"ubunye_error_record__{assets_def.node_def.name}",
        required_resource_keys=set(assets_def.required_resource_keys),
    )
    def record_the_failure(context: dg.HookContext) -> None:
        record_step_failure(context, assets_def)

    return assets_def.with_hooks({record_the_failure})


def place_of(
    context: dg.HookContext, assets_def: dg.AssetsDefinition, key: dg.AssetKey
) -> RecordPlace | None:
    """The ``UbunyeResource`` that records ``key``: the one of its ``UbunyeIOManager``, else one
    the asset uses itself; None when no Ubunye component is the asset's."""
    manager = getattr(context.resources, internals.io_manager_key_of(assets_def, key), None)
    if isinstance(manager, UbunyeIOManager):
        return manager.resource
    for resource_key in sorted(assets_def.required_resource_keys):
        resource = getattr(context.resources, resource_key, None)
        if isinstance(resource, UbunyeResource):
            return resource
    return None


def record_step_failure(context: dg.HookContext, assets_def: dg.AssetsDefinition) -> list[str]:
    """Save an ``error`` record for each asset the failed step was to materialise and has no
    record of yet: the user's exception (masked), the step's start, end and transform timing.
    Returns the paths saved; records the step opened are closed at resource teardown."""
    instance, run_id, step_key = context.instance, context.run_id, context.step_key
    run = instance.get_run_by_id(run_id)
    started, ended = internals.step_times(instance, run_id, step_key)
    session = session_of(run_id, step_key) or StepSession(
        run_id, step_key, started_epoch=started or time.time()
    )
    saved: list[str] = []
    for key, partition_key in internals.planned_assets(instance, run_id, step_key):
        place = place_of(context, assets_def, key) if key in assets_def.keys else None
        if run is None or place is None:
            continue
        facts = internals.AssetFacts.of_definition(assets_def, key)
        if facts.partitions_def is not None and partition_key is None:
            continue  # a range of partitions in one run: refused when written, nothing to keep
        subject = internals.asset_subject(
            run=run,
            step_key=step_key,
            asset_key=key,
            facts=facts,
            partition_key=partition_key,
            op_def=assets_def.op,
            op_config=context.op_config,
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
        close_record(open_record.record, "error", context.op_exception, ended_epoch=ended)
        saved.append(open_record.save())
    return saved
