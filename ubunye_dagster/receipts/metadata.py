"""The receipt as Dagster metadata, both ways: fixed key names, a run record's output -> metadata
entries, and those entries (with the materialisation's tags) read back as a `RecordedOutput`.

The drift sensor, a verified read and the end-to-end test read these keys, so they never change
meaning. A value that is not known is left out (never filled with a stand-in): a failed hash
shows ``ubunye/hash_error`` and no ``ubunye/data_hash``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import dagster as dg
from pydantic import Field

from ubunye_core.locations import StoreAccess
from ubunye_core.materialisations.byte_digest import algorithm_of
from ubunye_core.records import drift
from ubunye_core.records.drift import DETERMINISTIC_VARIABLE
from ubunye_core.records.model import SKETCH_FIELD, RunRecord, StepRecord
from ubunye_core.records.sketches import recorded_sketch, step_sketch
from ubunye_dagster.dagster_internals import CODE_VERSION_TAG, INPUT_DATA_VERSION_TAG_PREFIX
from ubunye_rows.hashing import Fingerprint

DATA_HASH = "ubunye/data_hash"
SCHEMA_HASH = "ubunye/schema_hash"
#: The row count is Dagster's own key, so the UI's row count column shows it.
ROW_COUNT = "dagster/row_count"
HASH_METHOD = "ubunye/hash_method"
HASH_SECONDS = "ubunye/hash_seconds"
#: The digest of the stored bytes (``ubunye_core.materialisations.byte_digest``): a read whose
#: bytes still hash to it takes this materialisation's data hash without hashing the rows again.
BYTES_HASH = "ubunye/bytes_hash"
#: Where a warehouse's rows were hashed: ``database`` (one query in it) or ``stream`` (streamed to
#: the kernel as Arrow batches); absent for a frame hashed in the step's memory.
HASHED_IN = "ubunye/hashed_in"
#: Present only when the hash failed; says why there is no data hash.
HASH_ERROR = "ubunye/hash_error"
CODE_HASH = "ubunye/code_hash"
#: The asset's run config hash: a changed config explains changed data.
CONFIG_HASH = "ubunye/config_hash"
ENVIRONMENT_HASH = "ubunye/environment_hash"
RECORD_PATH = "ubunye/record_path"
TASK_PATH = "ubunye/task_path"
#: The run record's run id (the Dagster run id, plus the encoded partition for a partition).
RUN_ID = "ubunye/run_id"
#: JSON: ``{input name: {"asset_key", "data_hash", "row_count", "hash_error"}}``.
INPUTS = "ubunye/inputs"
PARTITION = "ubunye/partition"
#: JSON list: every expectation checked on this output, passed or not (record entries).
EXPECTATION_RESULTS = "ubunye/expectation_results"
#: One line on the output's sketch (rows per bucket); the sketch itself is in the run record.
SKETCH = "ubunye/sketch"
#: Markdown for people: the verdict against the previous materialisation, the inputs' digests
#: and how each was proven, where the record is (``ubunye_dagster.drift.summary``).
SUMMARY = "ubunye/summary"
URI = "dagster/uri"
#: Where rows written outside the IO manager (by an external process, through Pipes) were
#: stored; an IO-managed asset reading the asset reads them there and verifies them.
STORED_AT = "ubunye/stored_at"
COLUMN_SCHEMA = "dagster/column_schema"

#: Asset definition metadata read by the IO manager (not written on materialisations).
EXPECTATIONS = "ubunye/expectations"
#: Asset definition metadata (copied onto its materialisations): ``True`` asks the drift sensor to
#: judge an asset that reads no asset strictly.
DETERMINISTIC = "ubunye/deterministic"
#: Asset definition metadata: the folder (or ``.py`` file) whose code is hashed into code_hash.
CODE_FOLDER = "ubunye/code_folder"


def plain(entry: Any) -> Any:
    """A metadata entry's plain value: a ``dg.MetadataValue`` unwrapped, anything else as is."""
    return getattr(entry, "value", entry)


def definition_metadata(
    assets: dg.Definitions | Iterable[Any],
) -> Iterator[tuple[dg.AssetKey, Mapping[str, Any]]]:
    """Each asset key with the metadata it was defined with, from asset definitions and specs
    (or every asset of a ``dg.Definitions``); other items are passed over."""
    items = (assets.assets or ()) if isinstance(assets, dg.Definitions) else assets
    for item in items:
        if isinstance(item, dg.AssetsDefinition):
            for key, metadata in item.metadata_by_key.items():
                yield key, metadata or {}
        elif isinstance(item, dg.AssetSpec):
            yield item.key, item.metadata or {}


def declared_true(metadata: Mapping[str, Any], key: str) -> bool:
    """True when definition metadata sets ``key`` to True (plain or as a metadata value)."""
    value = metadata.get(key)
    return plain(value) is True


def column_schema(pairs: Sequence[tuple[str, str]]) -> dg.TableSchema:
    """A Dagster table schema from ``(column, canonical type)`` pairs, in the frame's order."""
    return dg.TableSchema(
        columns=[dg.TableColumn(name=str(name), type=str(kind)) for name, kind in pairs]
    )


def inputs_summary(
    inputs: Sequence[StepRecord], asset_keys: Mapping[str, str | None]
) -> dict[str, dict[str, Any]]:
    """The ``ubunye/inputs`` document: each input's asset key, data hash, rows and hash error."""
    return {
        step.name: {
            "asset_key": asset_keys.get(step.name),
            "data_hash": step.data_hash,
            "row_count": step.row_count,
            "hash_error": step.hash_error,
        }
        for step in inputs
    }


def _extension_entries(output: StepRecord) -> dict[str, Any]:
    """The step's fields beyond the reference's, as metadata: the stored bytes' digest, where a
    warehouse's rows were hashed, and one line on the sketch (the sketch stays in the record)."""
    entries: dict[str, Any] = {}
    sketch = step_sketch(output)
    if sketch is not None:
        entries[SKETCH] = sketch.summary()
    if output.stored_bytes_hash() is not None:
        entries[BYTES_HASH] = output.stored_bytes_hash()
    if output.hashed_in() is not None:
        entries[HASHED_IN] = output.hashed_in()
    return entries


def output_metadata(
    record: RunRecord,
    output: StepRecord,
    *,
    record_path: str,
    input_asset_keys: Mapping[str, str | None],
    schema_pairs: Sequence[tuple[str, str]] | None = None,
    partition_key: str | None = None,
    expectation_results: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The metadata of one materialisation, from its record and the output step it wrote."""
    entries: dict[str, Any] = {}
    if output.data_hash is not None:
        entries[DATA_HASH] = output.data_hash
    if output.schema_hash is not None:
        entries[SCHEMA_HASH] = output.schema_hash
    if output.row_count is not None:
        entries[ROW_COUNT] = dg.MetadataValue.int(int(output.row_count))
    if output.hash_method is not None:
        entries[HASH_METHOD] = output.hash_method
    if output.hash_seconds is not None:
        entries[HASH_SECONDS] = dg.MetadataValue.float(float(output.hash_seconds))
    if output.hash_error is not None:
        entries[HASH_ERROR] = output.hash_error
    entries.update(_extension_entries(output))
    if record.code_hash is not None:
        entries[CODE_HASH] = record.code_hash
    if record.environment_hash is not None:
        entries[ENVIRONMENT_HASH] = record.environment_hash
    if record.config_hash is not None:
        entries[CONFIG_HASH] = record.config_hash
    if (record.variables or {}).get(DETERMINISTIC_VARIABLE) is True:
        entries[DETERMINISTIC] = True
    entries[RECORD_PATH] = dg.MetadataValue.path(record_path)
    entries[TASK_PATH] = record.task_path
    entries[RUN_ID] = record.run_id
    entries[INPUTS] = dg.MetadataValue.json(inputs_summary(record.inputs, input_asset_keys))
    if partition_key is not None:
        entries[PARTITION] = str(partition_key)
    if expectation_results:
        entries[EXPECTATION_RESULTS] = dg.MetadataValue.json(
            [dict(entry) for entry in expectation_results]
        )
    if output.location:
        entries[URI] = output.location
    if schema_pairs:
        entries[COLUMN_SCHEMA] = dg.MetadataValue.table_schema(column_schema(schema_pairs))
    return entries


class RecordedOutput(drift.DriftEvidence):
    """A receipt read back from a materialisation's metadata and tags: the evidence its drift is
    judged by, and what a read of its rows is held against."""

    schema_hash: str | None = None
    row_count: int | None = None
    bytes_hash: str | None = None
    #: Where rows written outside the IO manager were stored, when they were.
    stored_at: str | None = None
    #: Who recorded it, for messages ("Dagster's materialisation of x (run ...)").
    source: str = "Dagster's materialisation"
    #: How its run record is opened (the store's options).
    access: StoreAccess = Field(default_factory=StoreAccess, repr=False)

    @classmethod
    def from_metadata(
        cls, metadata: Mapping[str, Any], tags: Mapping[str, str] | None = None
    ) -> RecordedOutput:
        """The receipt ``output_metadata`` wrote (entries plain or as metadata values), with the
        upstream data versions Dagster tagged the materialisation with."""
        values = {key: plain(value) for key, value in metadata.items()}
        row_count = values.get(ROW_COUNT)
        return cls(
            data_hash=_text_or_none(values.get(DATA_HASH)),
            schema_hash=_text_or_none(values.get(SCHEMA_HASH)),
            row_count=int(row_count) if row_count is not None else None,
            hash_method=_text_or_none(values.get(HASH_METHOD)),
            hash_error=_text_or_none(values.get(HASH_ERROR)),
            bytes_hash=_text_or_none(values.get(BYTES_HASH)),
            code_hash=_text_or_none(values.get(CODE_HASH)),
            environment_hash=_text_or_none(values.get(ENVIRONMENT_HASH)),
            config_hash=_text_or_none(values.get(CONFIG_HASH)),
            inputs=drift.inputs_from_document(values.get(INPUTS)),
            upstream_versions=upstream_versions_from_tags(tags or {}),
            deterministic=values.get(DETERMINISTIC) is True,
            record_path=_text_or_none(values.get(RECORD_PATH)),
            stored_at=_text_or_none(values.get(STORED_AT)),
        )

    def bytes_algorithm(self) -> str | None:
        """The algorithm to digest the stored bytes with, when a matching digest would prove the
        whole receipt (byte digest, rows-v1 digest, schema hash, row count and method)."""
        if None in (self.data_hash, self.schema_hash, self.row_count, self.hash_method):
            return None
        return algorithm_of(self.bytes_hash)

    def recorded_fingerprint(self) -> Fingerprint:
        """The rows-v1 hashes this receipt recorded, as a fingerprint: asked of a whole receipt
        only (each hash set, as ``bytes_algorithm`` requires for a byte proof)."""
        return Fingerprint(
            schema_hash=self.schema_hash,  # type: ignore[arg-type]
            data_hash=self.data_hash,
            row_count=self.row_count,
            method=self.hash_method,  # type: ignore[arg-type]
        )

    def proven_input(self, name: str, storage: str, location: str, seconds: float) -> StepRecord:
        """The input step of stored bytes found to hash to this receipt's byte digest (in
        ``seconds``): the recorded digest, proven by the bytes, the rows not hashed again."""
        step = StepRecord.from_fingerprint(
            self.recorded_fingerprint(),
            name=name,
            direction="input",
            format=storage,
            location=location,
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
