"""What a record is about (its :class:`Subject`), read from the step or the event log's facts."""

from __future__ import annotations

from typing import Any

import dagster as dg

from ubunye_core.store import encode_name
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.dagster_internals import StepExecutionContext
from ubunye_dagster.receipts.identity import package_for_group
from ubunye_dagster.receipts.metadata import CODE_FOLDER, plain
from ubunye_dagster.receipts.records import Subject


def time_window_of(
    partitions_def: dg.PartitionsDefinition | None, partition_key: str | None
) -> tuple[Any, Any] | None:
    """The time window of a partition (of a time dimension for a multi-partition), else None."""
    if partitions_def is None or partition_key is None:
        return None
    if isinstance(partitions_def, dg.MultiPartitionsDefinition):
        by_dimension = getattr(partition_key, "keys_by_dimension", None) or {}
        for dimension in partitions_def.partitions_defs:
            if dimension.name in by_dimension:
                window = time_window_of(dimension.partitions_def, by_dimension[dimension.name])
                if window is not None:
                    return window
        return None
    if not isinstance(partitions_def, dg.TimeWindowPartitionsDefinition):
        return None
    window = partitions_def.time_window_for_partition_key(partition_key)
    return (window.start, window.end)


def _as_partition_key(
    partitions_def: dg.PartitionsDefinition | None, partition_key: str | None
) -> str | None:
    """A multi-partition key as a ``MultiPartitionKey`` (the event log gives it as text)."""
    if (
        isinstance(partitions_def, dg.MultiPartitionsDefinition)
        and partition_key is not None
        and not isinstance(partition_key, dg.MultiPartitionKey)
    ):
        return partitions_def.get_partition_key_from_str(partition_key)
    return partition_key


def asset_subject(
    *,
    run: dg.DagsterRun,
    step_key: str,
    asset_key: dg.AssetKey,
    facts: internals.AssetFacts,
    partition_key: str | None,
    op_def: dg.OpDefinition,
    op_config: Any,
) -> Subject:
    """What an asset (partition)'s record is about; the one place a record's subject is read."""
    code_folder = facts.metadata.get(CODE_FOLDER)
    partition_key = _as_partition_key(facts.partitions_def, partition_key)
    by_dimension = getattr(partition_key, "keys_by_dimension", None)
    return Subject(
        dagster_run_id=run.run_id,
        step_key=step_key,
        package=package_for_group(facts.group_name),
        key_parts=tuple(str(part) for part in asset_key.path),
        partition_key=partition_key,
        partition_dimensions=dict(by_dimension) if by_dimension else None,
        time_window=time_window_of(facts.partitions_def, partition_key),
        declared_code_folder=str(plain(code_folder) or "") or None,
        function_folder=internals.function_folder(op_def),
        op_config=op_config,
        code_version=facts.code_version,
        tags=dict(run.tags),
        job_name=run.job_name,
    )


def step_asset_subject(
    step_context: StepExecutionContext, asset_key: dg.AssetKey, partition_key: str | None
) -> Subject:
    """The subject of an asset's record, read from the step that materialises it."""
    step = internals.step_identity(step_context)
    return asset_subject(
        run=step.run,
        step_key=step.step_key,
        asset_key=asset_key,
        facts=internals.asset_facts(step_context, asset_key),
        partition_key=partition_key,
        op_def=step.op_def,
        op_config=step.op_config,
    )


def step_op_subject(step_context: StepExecutionContext, output_name: str) -> Subject:
    """The subject of an op output's record: package = job name, task = ``<op>.<output>``."""
    step = internals.step_identity(step_context)
    return Subject(
        dagster_run_id=step.run.run_id,
        step_key=step.step_key,
        package=encode_name(step.job_name),
        key_parts=(step.op_def.name, output_name),
        model="op",
        function_folder=internals.function_folder(step.op_def),
        op_config=step.op_config,
        tags=dict(step.run.tags),
        job_name=step.job_name,
    )
