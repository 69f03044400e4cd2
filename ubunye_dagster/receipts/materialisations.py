"""Reading a receipt back: the one lookup of an asset (partition)'s newest materialisation in the
Dagster event log (asked once per run for the unpartitioned assets a process's steps write), its
metadata and tags as plain values and its receipt (``metadata.py`` writes and reads them), and the
materialisations this process's steps made, which a later step of the same run reads instead."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import dagster as dg

from ubunye_core.locations import StoreAccess
from ubunye_core.materialisations.beside import run_beside
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.receipts.metadata import DATA_HASH, RecordedOutput, plain
from ubunye_dagster.receipts.per_run import PerRun


def newest_materialisation(
    instance: dg.DagsterInstance,
    key: dg.AssetKey,
    partition: str | None,
    before_storage_id: int | None = None,
) -> dg.EventLogRecord | None:
    """The newest materialisation of the asset and partition (an unpartitioned asset's only of
    its unpartitioned ones) before the storage id (the newest of all when it is None)."""
    cursor: str | None = None
    # The newest record first, alone: an unpartitioned asset's previous materialisation is
    # nearly always it, and every record fetched is deserialised. Pages of 20 after that.
    limit = 1
    while True:
        result = instance.fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=key,
                asset_partitions=[partition] if partition is not None else None,
                before_storage_id=before_storage_id,
            ),
            limit=limit,
            cursor=cursor,
            ascending=False,
        )
        limit = 20
        for record in result.records:
            # Without a partition filter the query spans partitions; an unpartitioned receipt
            # is only ever compared with another unpartitioned one.
            if record.partition_key == partition:
                return record
        if not result.has_more or partition is not None:
            return None
        cursor = result.cursor


def metadata_values(record: dg.EventLogRecord | None) -> dict[str, Any]:
    """The record's materialisation metadata as plain values (empty for no materialisation)."""
    materialization = record.asset_materialization if record is not None else None
    if materialization is None:
        return {}
    return {key: plain(value) for key, value in materialization.metadata.items()}


def tags_of(record: dg.EventLogRecord) -> Mapping[str, str]:
    """The tags Dagster gave the record's materialisation."""
    materialization = record.asset_materialization
    return (materialization.tags or {}) if materialization is not None else {}


@dataclass(frozen=True)
class Materialised:
    """A materialisation as a read holds it: the run that made it and its metadata (plain)."""

    run_id: str
    metadata: Mapping[str, Any]


#: The materialisations this process's steps made, by run: a later step of the same run reads
#: its upstream's receipt from here instead of asking the instance (a run's steps share one
#: process in-process; under the multiprocess executor each step asks).
_WRITTEN: PerRun[dict[tuple[str, str | None], Materialised]] = PerRun()


def remember_written(key: dg.AssetKey, partition: str | None, materialised: Materialised) -> None:
    """Keep what this process's step gave as the materialisation of ``key`` (and partition)."""
    with _WRITTEN.lock:
        run = _WRITTEN.setdefault(materialised.run_id, dict)
        run[(key.to_user_string(), _partition_text(partition))] = materialised


def written_in_run(run_id: str, key: dg.AssetKey, partition: str | None) -> Materialised | None:
    """The materialisation of ``key`` (and partition) a step of run ``run_id`` made in this
    process, if one did."""
    with _WRITTEN.lock:
        written = _WRITTEN.get(run_id) or {}
        return written.get((key.to_user_string(), _partition_text(partition)))


def _partition_text(partition: Any) -> str | None:
    return None if partition is None else str(partition)


def materialised_of(record: dg.EventLogRecord | None) -> Materialised | None:
    """An event log record's materialisation as a read holds it (None for no record)."""
    if record is None or record.asset_materialization is None:
        return None
    return Materialised(record.run_id, metadata_values(record))


def recorded_output(record: dg.EventLogRecord) -> RecordedOutput:
    """The receipt an event log record's materialisation carries: its metadata and tags."""
    return RecordedOutput.from_metadata(metadata_values(record), tags_of(record))


def latest_materialisation(
    context: dg.InputContext,
    asset_key: dg.AssetKey | None,
    partition_key: str | None,
    run_id: str | None = None,
) -> Materialised | None:
    """The asset's (partition's) latest materialisation, as an input reads it: the one a step of
    run ``run_id`` made in this process; else, for an unpartitioned asset, the one this process
    made in the run Dagster holds as its latest (same run, same data version); else Dagster's, if
    it can be asked."""
    if asset_key is None:
        return None
    written = written_in_run(run_id, asset_key, partition_key) if run_id else None
    if written is not None:
        return written
    held = written_earlier(context, asset_key) if partition_key is None else None
    if held is not None:
        return held
    try:
        return materialised_of(newest_materialisation(context.instance, asset_key, partition_key))
    except Exception:  # an instance that cannot be asked (a context built in a test)
        return None


def written_earlier(context: dg.InputContext, asset_key: dg.AssetKey) -> Materialised | None:
    """The materialisation this process made of the unpartitioned ``asset_key`` when it is the
    one Dagster read as the asset's latest as the step started (the same run and data version);
    None otherwise, and the event log is asked."""
    try:
        step_context = context.step_context
    except Exception:  # a context built in a test
        return None
    held = internals.held_input_materialisation(step_context, asset_key)
    if held is None:
        return None
    written = written_in_run(held.run_id, asset_key, None)
    if written is None or written.metadata.get(DATA_HASH) != held.data_version:
        return None
    return written


def receipt_of(
    latest: Materialised | None,
    asset_key: dg.AssetKey | None,
    access: StoreAccess | None = None,
) -> RecordedOutput | None:
    """The receipt a read holds the asset's rows against: the one ``latest`` (its
    materialisation) holds, its record opened through ``access``; None without a data hash."""
    if latest is None or asset_key is None:
        return None
    receipt = RecordedOutput.from_metadata(latest.metadata)
    if receipt.data_hash is None:
        return None
    source = f"Dagster's materialisation of {asset_key.to_user_string()} (run {latest.run_id})"
    return receipt.model_copy(update={"source": source, "access": access or StoreAccess()})


def stored_at(latest: Materialised | None) -> str | None:
    """Where a materialisation written outside the IO manager says its rows are, if it does."""
    return RecordedOutput.from_metadata(latest.metadata).stored_at if latest is not None else None


#: The newest materialisation, when the run's first step in this process asked, of each
#: unpartitioned asset this process's steps of the run write (by run id): one query of the
#: instance for the whole run instead of one for every step.
_NEWEST_BEFORE_RUN: PerRun[dict[str, dg.EventLogRecord | None]] = PerRun()


#: The previous materialisations asked for ahead on a helper thread, by run: each future by
#: asset and partition, taken by the output's judgement.
_ASKED_AHEAD: PerRun[dict[tuple[str, str | None], Future[dg.EventLogRecord | None]]] = PerRun()


def ask_previous_ahead(
    step_context: internals.StepExecutionContext, key: dg.AssetKey, partition: str | None
) -> None:
    """Start asking, on a helper thread, what ``previous_materialisation`` will answer for ``key``
    (and partition), so the answer is at hand when the step judges its output; nothing when the
    run's memory holds it or it is asked already."""
    run_id, _ = internals.run_and_step_of(step_context)
    name = (key.to_user_string(), _partition_text(partition))
    with _ASKED_AHEAD.lock:
        asked = _ASKED_AHEAD.setdefault(run_id, dict)
        if name in asked or _held_for_run(run_id, key, partition):
            return
        asked[name] = run_beside(_previous_now, step_context, key, partition)


def previous_materialisation(
    step_context: internals.StepExecutionContext, key: dg.AssetKey, partition: str | None
) -> dg.EventLogRecord | None:
    """The materialisation an output of the step follows: the newest of ``key`` (and partition)
    in the event log. An unpartitioned asset of a run of several is read from what the run's
    first step asked for all of them; a partition, or an asset this process already wrote in the
    run (a retried step), is asked for alone, unless the step asked for it ahead."""
    run_id, _ = internals.run_and_step_of(step_context)
    with _ASKED_AHEAD.lock:
        asked = _ASKED_AHEAD.get(run_id) or {}
        pending = asked.pop((key.to_user_string(), _partition_text(partition)), None)
    if pending is not None and pending.exception() is None:
        return pending.result()
    return _previous_now(step_context, key, partition)  # a failed ask raises again here


def _previous_now(
    step_context: internals.StepExecutionContext, key: dg.AssetKey, partition: str | None
) -> dg.EventLogRecord | None:
    instance = internals.instance_of(step_context)
    run_id, _ = internals.run_and_step_of(step_context)
    if partition is None and written_in_run(run_id, key, None) is None:
        newest = _newest_before_run(instance, step_context, run_id)
        if key.to_user_string() in newest:
            return newest[key.to_user_string()]
    return newest_materialisation(instance, key, partition)


def _held_for_run(run_id: str, key: dg.AssetKey, partition: str | None) -> bool:
    """Whether the run's memory answers ``previous_materialisation`` without a query."""
    if partition is not None or written_in_run(run_id, key, None) is not None:
        return False
    newest = _NEWEST_BEFORE_RUN.get(run_id)
    return newest is not None and key.to_user_string() in newest


def _newest_before_run(
    instance: dg.DagsterInstance, step_context: internals.StepExecutionContext, run_id: str
) -> dict[str, dg.EventLogRecord | None]:
    """Each unpartitioned asset of the run's steps in this process with its newest
    materialisation, asked once (nothing when there is a single asset: one lookup is as cheap)."""
    return _NEWEST_BEFORE_RUN.setdefault(
        run_id,
        lambda: _newest_of(instance, internals.unpartitioned_assets_to_execute(step_context)),
    )


def _newest_of(
    instance: dg.DagsterInstance, keys: list[dg.AssetKey]
) -> dict[str, dg.EventLogRecord | None]:
    """The newest materialisation of each of ``keys`` (None: never materialised), in one query;
    an asset whose newest is a partition's is left out (``newest_materialisation`` filters)."""
    if len(keys) < 2:
        return {}
    found: dict[str, dg.EventLogRecord | None] = {key.to_user_string(): None for key in keys}
    for asset_record in instance.get_asset_records(keys):
        entry = asset_record.asset_entry
        newest = entry.last_materialization_record
        name = entry.asset_key.to_user_string()
        if newest is not None and newest.partition_key is not None:
            found.pop(name, None)
        else:
            found[name] = newest
    return found
