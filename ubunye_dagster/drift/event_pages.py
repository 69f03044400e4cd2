"""Paging the event log for the drift sensor: the materialisations after its cursor, a page at a
time, stopping where a storage id may still be filled in, skipping verdicts already reported."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import dagster as dg

from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.drift.check_spec import CHECK_NAME

# How far a verdict's timestamp may trail its materialisation's across machines.
VERDICT_CLOCK_SKEW_SECONDS = 300.0


def pending_records(
    instance: dg.DagsterInstance,
    asset_keys: Sequence[dg.AssetKey] | None,
    after_storage_id: int,
    limit: int,
) -> list[dg.EventLogRecord]:
    """The `limit` oldest materialisations after the storage id, across the given assets.

    Assets whose latest materialisation is not newer than the cursor are not queried. Each of the
    others is asked for a page of its oldest new records, about twice its share of `limit`: every
    record fetched is deserialised, so a backlog costs a tick about `limit` records, not `limit`
    per asset. See `complete_prefix` for why the result is exactly the oldest overall.
    """
    asset_records = instance.get_asset_records(list(asset_keys) if asset_keys else None)
    #: Each new asset's latest materialisation, as its asset record names it.
    latest_of = {
        record.asset_entry.asset_key: latest
        for record in asset_records
        if (latest := record.asset_entry.last_materialization_storage_id or -1) > after_storage_id
    }
    if not latest_of:
        return []
    page = min(limit, 2 * -(-limit // len(latest_of)))
    found: list[dg.EventLogRecord] = []
    #: Where each asset that may have more new records was left: its last fetched storage id.
    left_at: dict[dg.AssetKey, int] = {}

    def fetch(key: dg.AssetKey, after: int, count: int) -> None:
        result = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, after_storage_id=after),
            limit=count,
            ascending=True,
        )
        found.extend(result.records)
        left_at.pop(key, None)
        # A short page that stops before the asset's latest materialisation is cut all the
        # same: the storage leaves out rows it cannot read, so a short page is no proof of end.
        if result.records and (result.has_more or result.records[-1].storage_id < latest_of[key]):
            left_at[key] = result.records[-1].storage_id

    for key in latest_of:
        fetch(key, after_storage_id, page)
    while True:
        prefix, bound = complete_prefix(found, left_at)
        if len(prefix) >= limit or bound is None:
            return prefix[:limit]
        bounding = min(left_at, key=left_at.__getitem__)
        fetch(bounding, bound, max(page, limit - len(prefix)))


def complete_prefix(
    found: list[dg.EventLogRecord], left_at: Mapping[dg.AssetKey, int]
) -> tuple[list[dg.EventLogRecord], int | None]:
    """The fetched records no unfetched one can precede, in storage-id order, and their bound.

    An asset cut off at storage id N may hold more records just after N, so only the records up
    to the lowest such N are known to be all there is; the bound is None when no asset was cut.
    """
    found.sort(key=lambda record: record.storage_id)
    bound = min(left_at.values(), default=None)
    if bound is None:
        return found, None
    return [record for record in found if record.storage_id <= bound], bound


def already_reported(
    instance: dg.DagsterInstance, pending: Sequence[dg.EventLogRecord], after_storage_id: int
) -> set[int]:
    """The pending materialisations a sensor has already reported a `ubunye_reproducible`
    verdict of (the daemon reports a tick's verdicts before it stores the tick's cursor)."""
    earliest: dict[dg.AssetKey, float] = {}
    for record in pending:
        key = materialised_asset_key(record)
        earliest[key] = min(earliest.get(key, record.timestamp), record.timestamp)
    found: set[int] = set()
    for key, timestamp in earliest.items():
        check_key = dg.AssetCheckKey(key, CHECK_NAME)
        # A verdict is created after its materialisation; the margin absorbs clock skew between
        # the step's machine and the daemon's, which stamp the two.
        not_before = timestamp - VERDICT_CLOCK_SKEW_SECONDS
        found |= internals.storage_ids_judged_outside_runs(
            instance, check_key, after_storage_id, not_before
        )
    return found


def materialised_asset_key(record: dg.EventLogRecord) -> dg.AssetKey:
    key = record.asset_key
    if key is None:
        raise ValueError(f"event log record {record.storage_id} is not an asset event")
    return key
