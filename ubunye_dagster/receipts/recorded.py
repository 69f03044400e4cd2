"""What Dagster recorded when an asset (partition) was last materialised: the receipt a read is
held against, and the input step it proves when the stored bytes still hash to it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from ubunye_core.locations import StoreAccess
from ubunye_core.materialisations.byte_digest import algorithm_of
from ubunye_core.records.model import SKETCH_FIELD, StepRecord
from ubunye_core.records.sketches import recorded_sketch
from ubunye_dagster.receipts.metadata import (
    BYTES_HASH,
    DATA_HASH,
    HASH_METHOD,
    RECORD_PATH,
    ROW_COUNT,
    SCHEMA_HASH,
    STORED_AT,
)


@dataclass(frozen=True)
class RecordedOutput:
    """The receipt of a materialisation as its metadata holds it, and who recorded it."""

    data_hash: str
    #: Who recorded it, for messages ("Dagster's materialisation of x (run ...)").
    source: str
    schema_hash: str | None = None
    row_count: int | None = None
    hash_method: str | None = None
    bytes_hash: str | None = None
    #: The run record the materialisation wrote (its sketch comes from there).
    record_path: str | None = None
    #: How that record is opened (the store's options).
    access: StoreAccess = field(default_factory=StoreAccess, repr=False)

    def bytes_algorithm(self) -> str | None:
        """The algorithm to digest the stored bytes with, when a matching digest would prove the
        whole receipt (byte digest, rows-v1 digest, schema hash, row count and method)."""
        if None in (self.schema_hash, self.row_count, self.hash_method):
            return None
        return algorithm_of(self.bytes_hash)

    def proven_input(self, name: str, storage: str, location: str, seconds: float) -> StepRecord:
        """The input step of stored bytes found to hash to this receipt's byte digest (in
        ``seconds``): the recorded digest, proven by the bytes, the rows not hashed again."""
        step = StepRecord(
            name=name,
            direction="input",
            format=storage,
            location=location,
            row_count=self.row_count,
            schema_hash=self.schema_hash,
            data_hash=self.data_hash,
            hash_method=self.hash_method,
            hash_seconds=round(seconds, 6),
            hash_basis="stored-bytes",
            bytes_hash=self.bytes_hash,
        )
        step.source_note = (
            f"verified: its stored bytes hash to the byte digest recorded by {self.source}, so "
            "its rows are those of the recorded digest (not hashed again)"
        )
        sketch = recorded_sketch(self.record_path, self.data_hash, self.access)
        if sketch is not None:  # so the digest still combines with others
            setattr(step, SKETCH_FIELD, sketch)
        return step


def _value(metadata: dict[str, Any], key: str) -> Any:
    entry = metadata.get(key)
    return getattr(entry, "value", entry)


def latest_materialisation(
    context: dg.InputContext, asset_key: dg.AssetKey | None, partition_key: str | None
) -> dg.EventLogRecord | None:
    """The asset's (partition's) latest materialisation in Dagster, if it can be asked."""
    if asset_key is None:
        return None
    try:
        records = context.instance.fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=asset_key,
                asset_partitions=[partition_key] if partition_key is not None else None,
            ),
            limit=1,
        ).records
    except Exception:  # an instance that cannot be asked (a context built in a test)
        return None
    return records[0] if records else None


def receipt_of(
    latest: dg.EventLogRecord | None,
    asset_key: dg.AssetKey | None,
    access: StoreAccess | None = None,
) -> RecordedOutput | None:
    """The receipt a materialisation's metadata holds (its record opened through ``access``);
    None without ``ubunye/data_hash``."""
    metadata = _metadata_of(latest)
    data_hash = _value(metadata, DATA_HASH)
    if not data_hash or asset_key is None:
        return None
    row_count = _value(metadata, ROW_COUNT)
    return RecordedOutput(
        data_hash=str(data_hash),
        source=f"Dagster's materialisation of {asset_key.to_user_string()} (run {latest.run_id})",
        schema_hash=_value(metadata, SCHEMA_HASH),
        row_count=int(row_count) if row_count is not None else None,
        hash_method=_value(metadata, HASH_METHOD),
        bytes_hash=_value(metadata, BYTES_HASH),
        record_path=_value(metadata, RECORD_PATH),
        access=access or StoreAccess(),
    )


def stored_at(latest: dg.EventLogRecord | None) -> str | None:
    """Where a materialisation written outside the IO manager says its rows are, if it does."""
    location = _value(_metadata_of(latest), STORED_AT)
    return str(location) if location else None


def _metadata_of(latest: dg.EventLogRecord | None) -> dict[str, Any]:
    materialization = latest.asset_materialization if latest is not None else None
    return dict(materialization.metadata) if materialization else {}
