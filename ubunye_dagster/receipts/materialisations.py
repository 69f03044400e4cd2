"""Reading a receipt back from the Dagster event log: the one lookup of an asset (partition)'s
newest materialisation, and its metadata and tags as plain values (``metadata.py`` writes them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dagster as dg

from ubunye_dagster.receipts.metadata import plain


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
