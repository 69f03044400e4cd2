"""Every read of Dagster beyond the public IO manager, resource and hook contexts, in one file.

The step execution context and the job's asset layer are Dagster internals: a Dagster upgrade
is checked here, and ``tests/dagster/test_dagster_internals.py`` fails loudly when one of these
moves.
What a read gives back is plain (facts, keys, text); records are built from it elsewhere.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
from dagster._core.definitions.data_version import (
    CODE_VERSION_TAG,
    DATA_VERSION_TAG,
    DEFAULT_DATA_VERSION,
    INPUT_DATA_VERSION_TAG_PREFIX,
)
from dagster._core.definitions.sensor_definition import SensorType
from dagster._core.definitions.unresolved_asset_job_definition import (
    UnresolvedAssetJobDefinition,
)
from dagster._core.execution.context.system import StepExecutionContext
from dagster._record import replace as replace_record

try:  # Dagster 1.11 and later
    from dagster._core.definitions.asset_checks.asset_check_evaluation import (
        AssetCheckEvaluationTargetMaterializationData,
    )
    from dagster._core.definitions.assets.graph.asset_graph import AssetNode
    from dagster._core.definitions.assets.job.asset_layer import AssetLayer
except ImportError:  # Dagster 1.10 keeps the three one package up
    from dagster._core.definitions.asset_check_evaluation import (
        AssetCheckEvaluationTargetMaterializationData,
    )
    from dagster._core.definitions.asset_graph import AssetNode
    from dagster._core.definitions.asset_layer import AssetLayer


# Dagster types used by name elsewhere in the glue (no public alias exists for them), and the
# tags Dagster puts on a step's materialisation: its code version, its data version, and one
# data version per upstream asset ("<prefix>/<asset key>"), the version Dagster records for an
# upstream it has no data version for ("INITIAL").
__all__ = [
    "CODE_VERSION_TAG",
    "DATA_VERSION_TAG",
    "DEFAULT_DATA_VERSION",
    "INPUT_DATA_VERSION_TAG_PREFIX",
    "AssetCheckEvaluationTargetMaterializationData",
    "AssetLayer",
    "AssetNode",
    "StepExecutionContext",
    "UnresolvedAssetJobDefinition",
]


def _layer_method(name: str, name_in_1_10: str) -> Callable[..., dg.AssetKey | None]:
    """``AssetLayer.<name>``, or its Dagster 1.10 name; an ImportError naming both if neither."""
    method = getattr(AssetLayer, name, None) or getattr(AssetLayer, name_in_1_10, None)
    if method is None:
        raise ImportError(f"Dagster {dg.__version__}'s AssetLayer has no {name} ({name_in_1_10})")
    return method


# Dagster 1.11 renamed AssetLayer.asset_key_for_output/_input to get_asset_key_for_node_output/
# _input; either one is called as (layer, node handle, output or input name) -> key or None.
_LAYER_KEY_FOR_OUTPUT = _layer_method("get_asset_key_for_node_output", "asset_key_for_output")
_LAYER_KEY_FOR_INPUT = _layer_method("get_asset_key_for_node_input", "asset_key_for_input")


def asset_key_for_node_output(
    layer: AssetLayer, node_handle: Any, output_name: str
) -> dg.AssetKey | None:
    """The asset key an op's output materialises in the job's asset layer, or None."""
    return _LAYER_KEY_FOR_OUTPUT(layer, node_handle, output_name)


def asset_key_for_node_input(
    layer: AssetLayer, node_handle: Any, input_name: str
) -> dg.AssetKey | None:
    """The asset key an op's input loads in the job's asset layer, or None."""
    return _LAYER_KEY_FOR_INPUT(layer, node_handle, input_name)


@dataclass(frozen=True)
class AssetFacts:
    """What an asset was defined with: group, code version, metadata and partitions."""

    group_name: str | None
    code_version: str | None
    metadata: Mapping[str, Any]
    partitions_def: dg.PartitionsDefinition | None

    @classmethod
    def of_definition(cls, assets_def: dg.AssetsDefinition, key: dg.AssetKey) -> AssetFacts:
        """The facts of ``key`` from its (public) assets definition."""
        return cls(
            group_name=assets_def.group_names_by_key.get(key),
            code_version=assets_def.code_versions_by_key.get(key),
            metadata=assets_def.metadata_by_key.get(key) or {},
            partitions_def=assets_def.partitions_def,
        )


def step_context_of(
    context: dg.AssetExecutionContext | dg.OpExecutionContext,
) -> StepExecutionContext:
    """The step execution context behind an asset's (or op's) execution context."""
    op_context = getattr(context, "op_execution_context", context)
    return op_context.get_step_execution_context()


def run_and_step_of(step_context: StepExecutionContext) -> tuple[str, str]:
    """``(Dagster run id, step key)`` of the step."""
    return step_context.run_id, step_context.step.key


def instance_of(step_context: StepExecutionContext) -> dg.DagsterInstance | None:
    """The Dagster instance the step runs on (None for a context built without one)."""
    return getattr(step_context, "instance", None)


def io_manager_key_of(assets_def: dg.AssetsDefinition, key: dg.AssetKey) -> str:
    """The resource key of the IO manager that stores ``key``."""
    return assets_def.get_io_manager_key_for_asset_key(key)


def _asset_node(step_context: StepExecutionContext, asset_key: dg.AssetKey) -> AssetNode | None:
    try:
        return step_context.job_def.asset_layer.get(asset_key)
    except Exception:  # an asset outside the job's asset graph
        return None


def asset_facts(step_context: StepExecutionContext, asset_key: dg.AssetKey) -> AssetFacts:
    """The facts of an asset in the step's job (all unknown when the job does not know it)."""
    node = _asset_node(step_context, asset_key)
    if node is None:
        return AssetFacts(None, None, {}, None)
    return AssetFacts(node.group_name, node.code_version, node.metadata or {}, node.partitions_def)


def function_folder(op_def: dg.OpDefinition) -> str | None:
    """The folder of the module that defines an op's (asset's) function, or None if unknown."""
    try:
        fn = op_def.compute_fn
        fn = getattr(fn, "decorated_fn", fn)
        source = inspect.getsourcefile(inspect.unwrap(fn))
    except (AttributeError, TypeError):
        return None
    return str(Path(source).resolve().parent) if source else None


@dataclass(frozen=True)
class StepIdentity:
    """Who a step is, as its context knows it: its run, key, job, op and the op's config."""

    run: dg.DagsterRun
    step_key: str
    job_name: str
    op_def: dg.OpDefinition
    op_config: Any


def step_identity(step_context: StepExecutionContext) -> StepIdentity:
    """The step's run, key, job, op definition and op config."""
    return StepIdentity(
        run=step_context.dagster_run,
        step_key=step_context.step.key,
        job_name=step_context.job_name,
        op_def=step_context.op_def,
        op_config=step_context.op_config,
    )


def step_times(
    instance: dg.DagsterInstance | None, dagster_run_id: str, step_key: str
) -> tuple[float | None, float | None]:
    """When Dagster started and ended the step (its step stats); None where not known."""
    try:
        [stats] = instance.get_run_step_stats(dagster_run_id, step_keys=[step_key])
    except Exception:  # no stats yet, or an instance without event storage (a test context)
        return None, None
    return (
        float(stats.start_time) if stats.start_time else None,
        float(stats.end_time) if stats.end_time else None,
    )


def listen_to_run_events(
    instance: dg.DagsterInstance, dagster_run_id: str, listener: Callable[[Any], None]
) -> bool:
    """Have ``listener`` called with each event log entry this process stores for the run from
    now on; False when the instance takes no listener."""
    try:
        instance.add_event_listener(dagster_run_id, listener)
    except Exception:  # an instance without event handling (a test double)
        return False
    return True


def parent_keys(step_context: StepExecutionContext, asset_key: dg.AssetKey) -> set[str] | None:
    """The asset's upstream keys as ``a/b`` text, or None when the job does not say."""
    node = _asset_node(step_context, asset_key)
    return None if node is None else {"/".join(key.path) for key in node.parent_keys}


def upstream_data_versions(
    step_context: StepExecutionContext, asset_key: dg.AssetKey
) -> dict[str, str | None] | None:
    """Each upstream of the asset (``a/b``) with the data version Dagster tags the asset's
    materialisation with (read from the same cache, so record and tags agree); None for an
    upstream never materialised or observed, and None in all when the job does not know it."""
    node = _asset_node(step_context, asset_key)
    if node is None:
        return None
    versions: dict[str, str | None] = {}
    for key in sorted(node.parent_keys, key=lambda parent: parent.to_user_string()):
        info = step_context.maybe_fetch_and_get_input_asset_version_info(key)
        version = info.data_version if info is not None else None
        versions[key.to_user_string()] = version.value if version is not None else None
    return versions


@dataclass(frozen=True)
class ForeignInput:
    """An input of the step that an IO manager other than UbunyeIOManager loads."""

    input_name: str
    asset_key: str | None
    io_manager_key: str


def inputs_of_other_io_managers(
    step_context: StepExecutionContext, asset_key: dg.AssetKey, loaded: set[str]
) -> list[ForeignInput]:
    """The asset's inputs not in ``loaded`` (the Ubunye-loaded names), with who loads them."""
    try:
        input_defs = list(step_context.op_def.input_defs)
        layer = step_context.job_def.asset_layer
        node_handle = step_context.node_handle
    except Exception:  # a step without an op definition
        return []
    parents = parent_keys(step_context, asset_key)
    found = []
    for input_def in input_defs:
        if input_def.name in loaded or input_def.dagster_type.is_nothing:
            continue
        upstream = asset_key_for_node_input(layer, node_handle, input_def.name)
        upstream_text = "/".join(upstream.path) if upstream is not None else None
        if parents is not None and upstream_text is not None and upstream_text not in parents:
            continue  # an input of another asset of the same multi-asset
        manager = input_def.input_manager_key
        if manager is None and upstream is not None and layer.has(upstream):
            manager = layer.get(upstream).io_manager_key
        found.append(ForeignInput(input_def.name, upstream_text, manager or "io_manager"))
    return found


def step_asset_outputs(step_context: StepExecutionContext) -> list[tuple[str, dg.AssetKey]]:
    """``(output name, asset key)`` of each asset the step materialises (its selected outputs)."""
    layer = step_context.job_def.asset_layer
    selected = step_context.get_output_asset_keys()
    found = []
    for step_output in step_context.step.step_outputs:
        key = asset_key_for_node_output(layer, step_context.node_handle, step_output.name)
        if key is not None and key in selected:
            found.append((step_output.name, key))
    return found


def one_partition_outputs(
    step_context: StepExecutionContext,
) -> list[tuple[str, dg.AssetKey, str | None]]:
    """``(output name, asset key, partition)`` of each asset the step materialises in one
    partition (None when unpartitioned); an output covering a range is left out (the IO
    manager refuses it when it is written)."""
    found = []
    for output_name, key in step_asset_outputs(step_context):
        try:
            found.append((output_name, key, output_partition(step_context, output_name)))
        except ValueError:
            continue
    return found


def unpartitioned_assets_to_execute(step_context: StepExecutionContext) -> list[dg.AssetKey]:
    """The unpartitioned assets the steps this process executes for the run write (every step
    of the run in-process, the step alone in its own process)."""
    plan = step_context.execution_plan
    keys = []
    for step_key in plan.step_keys_to_execute:
        for step_output in plan.get_step_by_key(step_key).step_outputs:
            properties = step_output.properties
            if properties.asset_key is not None and not properties.is_asset_partitioned:
                keys.append(properties.asset_key)
    return list(dict.fromkeys(keys))


def output_partition(step_context: StepExecutionContext, output_name: str) -> str | None:
    """The one partition an output writes, None when unpartitioned (ValueError for a range)."""
    if not step_context.has_asset_partitions_for_output(output_name):
        return None
    start, end = step_context.asset_partition_key_range_for_output(output_name)
    if start != end:
        raise ValueError(
            f"output '{output_name}' covers the partitions {start} to {end} in one run; "
            "UbunyeIOManager writes one partition per run (launch the backfill with a "
            "multi-run policy)"
        )
    return start


def step_exception(step_context: StepExecutionContext | None) -> BaseException | None:
    """The exception the step failed with, as Dagster captured it, or None."""
    return None if step_context is None else step_context.step_exception


def has_seen_output(step_context: StepExecutionContext | None, output_name: str | None) -> bool:
    """True when Dagster saw the step emit ``output_name``."""
    if output_name is None or step_context is None:
        return False
    try:
        return bool(step_context.has_seen_output(output_name))
    except Exception:  # a Dagster without this check: keep the record rather than lose it
        return True


def set_data_version(
    step_context: StepExecutionContext, asset_key: dg.AssetKey, digest: str
) -> None:
    """Make ``digest`` the materialisation's data version (Dagster reads it back when it builds
    the materialisation event)."""
    step_context.set_data_version(asset_key, dg.DataVersion(digest))


@dataclass(frozen=True)
class HeldMaterialisation:
    """An input asset's latest materialisation as Dagster read it when the step started."""

    run_id: str
    data_version: str | None


def held_input_materialisation(
    step_context: StepExecutionContext, asset_key: dg.AssetKey
) -> HeldMaterialisation | None:
    """The run and data version of the asset's latest materialisation as Dagster read it when the
    step started, for the step's provenance (nothing is asked here); None when the step holds
    none, or holds an observation."""
    try:
        info = (step_context.input_asset_records or {}).get(asset_key)
    except Exception:  # a context built in a test
        return None
    if info is None or info.event_type != dg.DagsterEventType.ASSET_MATERIALIZATION:
        return None
    version = info.data_version.value if info.data_version is not None else None
    return HeldMaterialisation(info.run_id, version)


def planned_assets(
    instance: dg.DagsterInstance, dagster_run_id: str, step_key: str
) -> list[tuple[dg.AssetKey, str | None]]:
    """``(asset key, partition)`` of each materialisation the run planned for ``step_key``, from
    the run's event log."""
    planned = []
    events = instance.all_logs(
        dagster_run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED
    )
    for entry in events:
        data = entry.dagster_event.event_specific_data if entry.dagster_event else None
        if entry.step_key == step_key and data is not None:
            planned.append((data.asset_key, data.partition))
    return planned


def step_resource(context: dg.InputContext | dg.OutputContext, resource_key: str) -> Any:
    """The step's resource under ``resource_key``, or None (unknown key, or no step)."""
    try:
        resources = context.step_context.resources
    except Exception:  # a context built outside a run has no step
        return None
    return getattr(resources, resource_key, None)


def report_check_evaluations(
    step_context: StepExecutionContext,
    evaluations: list[dg.AssetCheckEvaluation],
    output_context: dg.OutputContext | None = None,
) -> int:
    """Log check evaluations from inside the step (an IO manager cannot yield them), each only
    when its check is declared in the step's job; returns how many were logged.

    ``DagsterEvent.asset_check_evaluation`` stores the event as it is built, so it is kept even
    when the step then fails. Given the output's context, the events also join the step's own
    event stream (as ``OutputContext.log_event`` does for materialisations), so an in-process
    result lists them.
    """
    from dagster._core.events import DagsterEvent

    declared = step_context.job_def.asset_layer.asset_graph.asset_check_keys
    logged = 0
    for evaluation in evaluations:
        if evaluation.asset_check_key in declared:
            event = DagsterEvent.asset_check_evaluation(step_context, evaluation)
            if output_context is not None:
                output_context._events.append(event)
            logged += 1
    return logged


def check_spec_in_job(
    step_context: StepExecutionContext, check_key: dg.AssetCheckKey
) -> dg.AssetCheckSpec | None:
    """The spec of a check declared in the step's job, or None when the job has no such check."""
    asset_graph = step_context.job_def.asset_layer.asset_graph
    if check_key not in asset_graph.asset_check_keys:
        return None
    return asset_graph.get_check_spec(check_key)


def _checks_in_run_events(
    instance: dg.DagsterInstance, dagster_run_id: str, event_type: dg.DagsterEventType
) -> set[dg.AssetCheckKey]:
    found: set[dg.AssetCheckKey] = set()
    for entry in instance.all_logs(dagster_run_id, of_type=event_type):
        data = entry.dagster_event.event_specific_data if entry.dagster_event else None
        if data is not None:
            found.add(dg.AssetCheckKey(data.asset_key, data.check_name))
    return found


def checks_planned_in_run(
    instance: dg.DagsterInstance, dagster_run_id: str
) -> set[dg.AssetCheckKey]:
    """The checks the run was launched to evaluate (its ``ASSET_CHECK_EVALUATION_PLANNED``
    events, stored when the run is created)."""
    planned = dg.DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED
    return _checks_in_run_events(instance, dagster_run_id, planned)


def checks_evaluated_in_run(
    instance: dg.DagsterInstance, dagster_run_id: str
) -> set[dg.AssetCheckKey]:
    """The checks the run has an evaluation of so far."""
    evaluated = dg.DagsterEventType.ASSET_CHECK_EVALUATION
    return _checks_in_run_events(instance, dagster_run_id, evaluated)


#: The run id Dagster stores an event reported outside any run under (a sensor's check result).
RUNLESS_RUN_ID = ""


def storage_ids_judged_outside_runs(
    instance: dg.DagsterInstance,
    check_key: dg.AssetCheckKey,
    after_storage_id: int,
    not_before_timestamp: float,
) -> set[int]:
    """The storage ids after ``after_storage_id`` of the materialisations that an evaluation of
    the check reported outside any run (a sensor's) targets.

    Executions are read newest first, a page at a time, until a sensor's evaluation of a
    materialisation at or before ``after_storage_id`` (a sensor judges in storage-id order) or
    one created before ``not_before_timestamp`` (older than anything it could be a verdict of).
    """
    found: set[int] = set()
    cursor: int | None = None
    page_size = 100
    while True:
        page = instance.event_log_storage.get_asset_check_execution_history(
            check_key, limit=page_size, cursor=cursor
        )
        for execution in page:
            if execution.create_timestamp < not_before_timestamp:
                return found
            target = _target_storage_id(execution.event)
            if execution.run_id != RUNLESS_RUN_ID or target is None:
                continue
            if target <= after_storage_id:
                return found
            found.add(target)
        if len(page) < page_size:
            return found
        cursor = page[-1].id


def _target_storage_id(event: Any) -> int | None:
    data = event.dagster_event.event_specific_data if event and event.dagster_event else None
    target = getattr(data, "target_materialization_data", None)
    return target.storage_id if target is not None else None


class _ChecksKeptAsChecks(dg.AssetChecksDefinition):
    """Asset checks that stay check definitions when Dagster rebuilds them.

    Dagster rebuilds a definition through ``dagster_internal_init`` (``with_attributes``, as
    when a component's ``defs.yaml`` metadata is added), which returns a plain
    ``AssetsDefinition`` even for checks; its repository then turns those back into check
    definitions passing ``execution_type``, a BetaWarning on every load about a parameter no one
    set. Rebuilt as this class, nothing is converted and nothing warns.
    """

    @staticmethod
    def dagster_internal_init(**attributes: Any) -> _ChecksKeptAsChecks:
        # Dagster's own dagster_internal_init passes the same beta parameter the same way.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=dg.BetaWarning)
            return _ChecksKeptAsChecks(**attributes)


def kept_as_checks(checks: dg.AssetChecksDefinition) -> dg.AssetChecksDefinition:
    """``checks`` as a definition that every Dagster rebuild keeps a check definition."""
    return _ChecksKeptAsChecks.dagster_internal_init(**checks.get_attributes_dict())


def definitions_with_assets(defs: dg.Definitions, assets: list[Any]) -> dg.Definitions:
    """The same Definitions (resources, jobs, sensors, executor, metadata, ...) with ``assets``
    instead of its own (Dagster offers no public copy of a Definitions with its assets changed)."""
    return replace_record(defs, assets=assets)


def defs_of_entry(context: dg.ComponentLoadContext, path: Path) -> dg.Definitions:
    """The definitions of the ``defs`` folder entry at ``path``, built through the component load
    context's cache: ``build_defs`` (``build_defs_at_path`` in Dagster 1.11). Dagster 1.10's
    context has neither, so there the component is refused with what to use instead."""
    build = getattr(context, "build_defs", None) or getattr(context, "build_defs_at_path", None)
    if build is None:
        raise RuntimeError(
            f"UbunyeReceipts needs Dagster 1.11 or newer to see the other components' assets "
            f"(this is Dagster {dg.__version__}); on this Dagster adopt in definitions.py with "
            "`defs = with_ubunye(dg.Definitions(...))` instead"
        )
    return build(path)


def automation_instance(context: dg.AutomationContext) -> dg.DagsterInstance:
    """The instance an automation condition is evaluated over."""
    return context.asset_graph_view.instance


def automation_parents(context: dg.AutomationContext) -> list[tuple[dg.AssetKey, bool]]:
    """The upstream keys of the asset an automation condition is evaluated for, each with
    whether it is partitioned."""
    graph = context.asset_graph
    return [
        (parent, graph.get(parent).partitions_def is not None)
        for parent in sorted(graph.get(context.key).parent_keys, key=lambda k: k.path)
    ]


def evaluated_in_user_code(sensor: dg.SensorDefinition) -> bool | None:
    """Whether an automation sensor is evaluated where the definitions are loaded
    (``use_user_code_server=True``); None for a sensor of another kind."""
    if sensor.sensor_type == SensorType.AUTOMATION:
        return True
    return False if sensor.sensor_type == SensorType.AUTO_MATERIALIZE else None
