"""An output an asset's own code accounts for, saved in the asset's run record: rows the asset
wrote itself (``UbunyeResource.record_output``) or rows an external process reported through
Dagster Pipes (``ubunye_dagster.own_rows.pipes``). No IO manager saw these rows; the record, its
metadata and its data version are the same as if one had."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from ubunye_core.records.model import RunRecord, StepRecord
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.drift.check_spec import configured_settings
from ubunye_dagster.drift.summary import summary_metadata
from ubunye_dagster.receipts.metadata import output_metadata
from ubunye_dagster.receipts.records import RecordPlace, close_record
from ubunye_dagster.receipts.session import LoadedInput, StepSession, asset_record


@dataclass(frozen=True)
class ProcessEvidence:
    """What the process that computed the rows says about itself, when that is not this one:
    its code hash, environment, the inputs it read and its timings."""

    code_hash: str | None
    environment: dict[str, Any]
    environment_hash: str | None
    inputs: tuple[LoadedInput, ...] = ()
    timings: tuple[dict[str, Any], ...] = ()

    def apply(self, record: RunRecord) -> None:
        """Put this evidence in ``record`` in place of the orchestrating process's own."""
        record.code_hash = self.code_hash
        record.environment = dict(self.environment)
        record.environment_hash = self.environment_hash


@dataclass
class SavedOutput:
    """What was saved: the record, its path, and the materialisation's metadata."""

    record: RunRecord
    path: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def data_version(self) -> dg.DataVersion | None:
        """The content data version: the last output's rows-v1 digest (None without one)."""
        digest = self.record.outputs[-1].data_hash if self.record.outputs else None
        return dg.DataVersion(digest) if digest is not None else None


def save_asset_output(
    session: StepSession,
    place: RecordPlace,
    context: dg.AssetExecutionContext,
    asset_key: dg.AssetKey,
    output: StepRecord | None,
    *,
    backend: str = "",
    evidence: ProcessEvidence | None = None,
    error: BaseException | str | None = None,
    schema_pairs: Sequence[tuple[str, str]] | None = None,
) -> SavedOutput:
    """Add ``output`` to the record of ``asset_key`` (the asset's partition) beside the inputs the
    step loaded and those in ``evidence``, close it (``error`` when one is given) and save it.
    Called again for another output, the record keeps every output recorded."""
    partition_key = context.partition_key if context.has_partition_key else None
    with session.lock:
        transform = session.transform_timing(context.op_def.name)
        open_record = asset_record(
            session, place, asset_key, output_name=None, partition_key=partition_key
        )
        record = open_record.record
        kept = [step for step in record.outputs if output is None or step.name != output.name]
        outside = evidence or ProcessEvidence(None, {}, None)
        keys = session.fill(
            open_record,
            [*session.inputs_of(asset_key), *outside.inputs],
            outputs=kept if output is None else [*kept, output],
            extra_timings=[transform, *outside.timings],
            expectations=record.expectations,
        )
        if evidence is not None:
            evidence.apply(record)
        record.backend = backend or record.backend
        if output is not None and schema_pairs:
            open_record.schemas[("output", output.name)] = list(schema_pairs)
        close_record(record, "success" if error is None else "error", error)
        # An error record is final; a success one still turns ``error`` if the step fails later.
        open_record.closed = error is not None
        path = open_record.save()
    if output is None:
        return SavedOutput(record=record, path=path)
    metadata = receipt_metadata(
        context, asset_key, partition_key, record, output, path, keys, schema_pairs
    )
    return SavedOutput(record=record, path=path, metadata=metadata)


def receipt_metadata(
    context: dg.AssetExecutionContext,
    asset_key: dg.AssetKey,
    partition_key: str | None,
    record: RunRecord,
    output: StepRecord,
    path: str,
    keys: dict[str, str | None],
    schema_pairs: Sequence[tuple[str, str]] | None,
) -> dict[str, Any]:
    """The materialisation's metadata: the summary first (the entry people read), then the
    receipt's entries, as the IO manager writes them."""
    step_context = internals.step_context_of(context)
    summary = summary_metadata(
        context.instance, asset_key, partition_key, record, output,
        record_path=path, input_asset_keys=keys,
        settings=configured_settings(step_context, asset_key), step_context=step_context,
    )  # fmt: skip
    entries = output_metadata(
        record, output, record_path=path, input_asset_keys=keys,
        schema_pairs=schema_pairs, partition_key=partition_key,
    )  # fmt: skip
    return {**summary, **entries}
