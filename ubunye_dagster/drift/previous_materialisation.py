"""The previous materialisation of an asset and partition in the Dagster event log, the receipt
an event log record carries (its metadata and tags, filled from its run record), and a receipt
judged against its predecessor: what the drift sensor, its check and the write path share."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import dagster as dg
from pydantic import BaseModel, ConfigDict

from ubunye_core.locations import StoreAccess
from ubunye_core.records import drift
from ubunye_core.records.model import RunRecord
from ubunye_dagster.dagster_internals import (
    CODE_VERSION_TAG,
    INPUT_DATA_VERSION_TAG_PREFIX,
    StepExecutionContext,
)
from ubunye_dagster.drift.settings import DriftSettings
from ubunye_dagster.receipts import metadata as metadata_keys
from ubunye_dagster.receipts.materialisations import (
    metadata_values,
    newest_materialisation,
    previous_materialisation,
    tags_of,
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
    previous_receipt = receipt_of(previous, settings, records_cache, notes)
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


def receipt_of(
    record: dg.EventLogRecord | None,
    settings: DriftSettings,
    records_cache: dict[str, RunRecord | None],
    notes: list[str],
) -> drift.DriftEvidence | None:
    """The receipt an event log record's materialisation carries (None for no record)."""
    if record is None:
        return None
    return receipt_from(metadata_values(record), tags_of(record), settings, records_cache, notes)


def receipt_from(
    values: Mapping[str, Any],
    tags: Mapping[str, str],
    settings: DriftSettings,
    records_cache: dict[str, RunRecord | None],
    notes: list[str],
) -> drift.DriftEvidence:
    """The receipt from metadata and tags; the run record fills only what the metadata lacks."""
    return filled_receipt(evidence_from_metadata(values, tags), settings, records_cache, notes)


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


def evidence_from_metadata(
    values: Mapping[str, Any], tags: Mapping[str, str] | None = None
) -> drift.DriftEvidence:
    """A receipt's drift evidence from materialisation metadata unwrapped to plain values, and
    the upstream data versions Dagster tagged the materialisation with."""
    return drift.DriftEvidence(
        data_hash=_text_or_none(values.get(metadata_keys.DATA_HASH)),
        hash_method=_text_or_none(values.get(metadata_keys.HASH_METHOD)),
        hash_error=_text_or_none(values.get(metadata_keys.HASH_ERROR)),
        code_hash=_text_or_none(values.get(metadata_keys.CODE_HASH)),
        environment_hash=_text_or_none(values.get(metadata_keys.ENVIRONMENT_HASH)),
        config_hash=_text_or_none(values.get(metadata_keys.CONFIG_HASH)),
        inputs=drift.inputs_from_document(values.get(metadata_keys.INPUTS)),
        upstream_versions=upstream_versions_from_tags(tags or {}),
        deterministic=values.get(metadata_keys.DETERMINISTIC) is True,
        record_path=_text_or_none(values.get(metadata_keys.RECORD_PATH)),
    )


def upstream_versions_from_tags(tags: Mapping[str, str]) -> dict[str, str] | None:
    """`{upstream asset key: data version}` from a materialisation's tags (one tag per upstream,
    `<prefix>/<asset key>`); None when the materialisation was not made in a step, which its
    missing code version tag shows (Dagster then records no upstreams)."""
    if CODE_VERSION_TAG not in tags:
        return None
    prefix = INPUT_DATA_VERSION_TAG_PREFIX + "/"
    return {name[len(prefix) :]: value for name, value in tags.items() if name.startswith(prefix)}


def _text_or_none(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)
