"""A receipt judged against its predecessor, the previous materialisation of the same asset and
partition in the Dagster event log, each receipt filled from its run record where its metadata
lacks something: what the drift sensor, its check and the write path share."""

from __future__ import annotations

import time

import dagster as dg
from pydantic import BaseModel, ConfigDict

from ubunye_core.locations import StoreAccess
from ubunye_core.records import drift
from ubunye_core.records.model import RunRecord
from ubunye_dagster.dagster_internals import StepExecutionContext
from ubunye_dagster.drift.settings import DriftSettings
from ubunye_dagster.receipts.materialisations import (
    newest_materialisation,
    previous_materialisation,
    recorded_output,
)


class Finding(BaseModel):
    """One judged materialisation: where it is in the event log and what was decided."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    asset_key: dg.AssetKey
    partition: str | None
    #: None for a materialisation judged in its own step, before the event log stored it.
    storage_id: int | None
    run_id: str
    timestamp: float
    receipt: drift.DriftEvidence
    previous_storage_id: int | None = None
    previous_run_id: str | None = None
    previous_receipt: drift.DriftEvidence | None = None
    judgement: drift.Judgement
    notes: tuple[str, ...] = ()


def judge_before_storage(
    instance: dg.DagsterInstance,
    key: dg.AssetKey,
    partition: str | None,
    receipt: drift.DriftEvidence,
    settings: DriftSettings,
    run_id: str,
    step_context: StepExecutionContext | None = None,
) -> Finding:
    """A materialisation its step is about to store (``receipt``: what its metadata and tags will
    say) judged as the sensor will judge it once stored: against the newest stored materialisation
    of the same asset and partition, which is then its predecessor (looked up with the run's
    other assets when ``step_context``, the storing step's, is given)."""
    notes: list[str] = []
    records_cache: dict[str, RunRecord | None] = {}
    receipt = filled_receipt(receipt, settings, records_cache, notes)
    if step_context is not None:
        previous = previous_materialisation(step_context, key, partition)
    else:
        previous = newest_materialisation(instance, key, partition)
    previous_receipt = filled_receipt_of(previous, settings, records_cache, notes)
    where = (None, run_id, time.time())
    return finding_against(
        key, partition, where, receipt, previous, previous_receipt, settings, notes
    )


def finding_against(
    key: dg.AssetKey,
    partition: str | None,
    where: tuple[int | None, str, float],
    receipt: drift.DriftEvidence,
    previous: dg.EventLogRecord | None,
    previous_receipt: drift.DriftEvidence | None,
    settings: DriftSettings,
    notes: list[str],
) -> Finding:
    """The finding of ``receipt`` (stored at ``where``: storage id, run id, timestamp) judged
    against its predecessor."""
    storage_id, run_id, timestamp = where
    return Finding(
        asset_key=key,
        partition=partition,
        storage_id=storage_id,
        run_id=run_id,
        timestamp=timestamp,
        receipt=receipt,
        previous_storage_id=previous.storage_id if previous is not None else None,
        previous_run_id=previous.run_id if previous is not None else None,
        previous_receipt=previous_receipt,
        judgement=drift.judge(
            receipt,
            previous_receipt,
            strict_sources=settings.strict_sources
            or key.to_user_string() in settings.deterministic_keys,
        ),
        notes=tuple(dict.fromkeys(notes)),
    )


def filled_receipt_of(
    record: dg.EventLogRecord | None,
    settings: DriftSettings,
    records_cache: dict[str, RunRecord | None],
    notes: list[str],
) -> drift.DriftEvidence | None:
    """The receipt an event log record's materialisation carries, filled from its run record
    (None for no record)."""
    if record is None:
        return None
    return filled_receipt(recorded_output(record), settings, records_cache, notes)


def filled_receipt(
    receipt: drift.DriftEvidence,
    settings: DriftSettings,
    records_cache: dict[str, RunRecord | None],
    notes: list[str],
) -> drift.DriftEvidence:
    """``receipt`` with what it lacks filled from its run record, when the settings use the
    lineage store (each record read once per ``records_cache``; why one could not be, in
    ``notes``)."""
    if not (settings.use_lineage_store and receipt.lacks_evidence and receipt.record_path):
        return receipt
    path = receipt.record_path
    if path not in records_cache:
        records_cache[path] = read_run_record(path, notes, settings.access)
    record = records_cache[path]
    return receipt.filled_from_record(record) if record is not None else receipt


def read_run_record(path: str, notes: list[str], access: StoreAccess) -> RunRecord | None:
    """Read a run record file (local path or fsspec URL, opened through ``access``); None, with a
    note, if unreadable."""
    try:
        return RunRecord.from_json(access.path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        notes.append(f"run record {path} unreadable: {type(error).__name__}: {error}")
        return None
