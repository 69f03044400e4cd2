"""What Dagster recorded when an asset (partition) was last materialised: the receipt a read is
held against, and the input step it proves when the stored bytes still hash to it."""

from __future__ import annotations

from dataclasses import dataclass, field

import dagster as dg

from ubunye_core.locations import StoreAccess
from ubunye_core.materialisations.byte_digest import algorithm_of
from ubunye_core.records.model import SKETCH_FIELD, StepRecord
from ubunye_core.records.sketches import recorded_sketch
from ubunye_dagster.receipts.materialisations import (
    Materialised,
    materialised_of,
    newest_materialisation,
    written_in_run,
)
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


def latest_materialisation(
    context: dg.InputContext,
    asset_key: dg.AssetKey | None,
    partition_key: str | None,
    run_id: str | None = None,
) -> Materialised | None:
    """The asset's (partition's) latest materialisation: the one a step of run ``run_id`` made
    in this process, else Dagster's, if it can be asked."""
    if asset_key is None:
        return None
    written = written_in_run(run_id, asset_key, partition_key) if run_id else None
    if written is not None:
        return written
    try:
        return materialised_of(newest_materialisation(context.instance, asset_key, partition_key))
    except Exception:  # an instance that cannot be asked (a context built in a test)
        return None


def receipt_of(
    latest: Materialised | None,
    asset_key: dg.AssetKey | None,
    access: StoreAccess | None = None,
) -> RecordedOutput | None:
    """The receipt a materialisation's metadata holds (its record opened through ``access``);
    None without ``ubunye/data_hash``."""
    metadata = latest.metadata if latest is not None else {}
    data_hash = metadata.get(DATA_HASH)
    if not data_hash or asset_key is None:
        return None
    row_count = metadata.get(ROW_COUNT)
    return RecordedOutput(
        data_hash=str(data_hash),
        source=f"Dagster's materialisation of {asset_key.to_user_string()} (run {latest.run_id})",
        schema_hash=metadata.get(SCHEMA_HASH),
        row_count=int(row_count) if row_count is not None else None,
        hash_method=metadata.get(HASH_METHOD),
        bytes_hash=metadata.get(BYTES_HASH),
        record_path=metadata.get(RECORD_PATH),
        access=access or StoreAccess(),
    )


def stored_at(latest: Materialised | None) -> str | None:
    """Where a materialisation written outside the IO manager says its rows are, if it does."""
    location = latest.metadata.get(STORED_AT) if latest is not None else None
    return str(location) if location else None
