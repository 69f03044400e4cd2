"""``with_error_records``: an ``error`` record for a step that fails before it loads or returns
anything, through Dagster's public failure hook.

Such a step never calls the IO manager, and Dagster hands a resource's teardown neither the job
nor its steps, so the asset definition carries a ``@dg.failure_hook`` that knows its assets.
The hook gets the user's own exception (``HookContext.op_exception``) and runs in the process
that ran the step, under ``dg.materialize``, the in-process and multiprocess executors and
``dagster dev`` alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

import dagster as dg

from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.io.io_manager import UbunyeIOManager
from ubunye_dagster.receipts.early_failures import save_error_records
from ubunye_dagster.receipts.records import RecordPlace
from ubunye_dagster.resource import UbunyeResource

Definition = TypeVar("Definition")

#: The failure hook's name: this prefix and the asset definition's node name.
HOOK_PREFIX = "ubunye_error_record__"


def with_error_records(definitions: Iterable[Definition]) -> list[Definition]:
    """The same asset definitions, each executable one with the failure hook that saves an
    ``error`` record when its step fails before touching the IO manager (specs, source assets
    and checks pass through unchanged)."""
    return [_with_failure_hook(d) if _needs_hook(d) else d for d in definitions]


def _needs_hook(definition: object) -> bool:
    """An executable asset definition without the hook yet (applying it twice changes nothing)."""
    return (
        isinstance(definition, dg.AssetsDefinition)
        and definition.is_executable
        and not any(hook.name.startswith(HOOK_PREFIX) for hook in definition.hook_defs)
    )


def _with_failure_hook(assets_def: dg.AssetsDefinition) -> dg.AssetsDefinition:
    @dg.failure_hook(
        name=f"{HOOK_PREFIX}{assets_def.node_def.name}",
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
    """Save an ``error`` record, with the user's exception, for each asset the failed step was to
    materialise and has no record of yet; returns the paths saved."""
    return save_error_records(
        context.instance,
        context.run_id,
        context.step_key,
        assets_def,
        place_for=lambda key: place_of(context, assets_def, key),
        op_config=context.op_config,
        error=context.op_exception,
    )
