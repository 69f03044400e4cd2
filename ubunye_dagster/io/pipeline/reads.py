"""One input's read through a storage: each part loaded, proven by its stored bytes or hashed,
and verified against the digest recorded when it was written."""

from __future__ import annotations

import collections.abc
import time
import typing
from typing import Any

import dagster as dg

from ubunye_core.locations import StoreAccess
from ubunye_core.records.model import StepRecord
from ubunye_core.records.sketches import combined_input_step
from ubunye_dagster.io.handlers.base import PARTITION_EXPR
from ubunye_dagster.io.storage.base import Part, ReadRequest, Storage, StoredRead
from ubunye_dagster.receipts.materialisations import latest_materialisation, receipt_of
from ubunye_dagster.receipts.metadata import RecordedOutput
from ubunye_dagster.receipts.records import PipelineSettings
from ubunye_dagster.receipts.session import LoadedInput, StepSession


class UnverifiedReadError(Exception):
    """An input's rows differ from what was recorded when it was written."""


def annotated_frame_type(dagster_type: Any) -> Any:
    """The frame type an input is annotated with (the value type of ``dict[str, T]``), or None."""
    typing_type = getattr(dagster_type, "typing_type", None)
    if typing.get_origin(typing_type) in (dict, collections.abc.Mapping):
        args = typing.get_args(typing_type)
        typing_type = args[1] if len(args) == 2 else None
    return typing_type if isinstance(typing_type, type) and typing_type is not object else None


def input_parts(context: dg.InputContext) -> list[Part]:
    """What an input reads: the upstream op's output, the asset, its one partition, or each of
    its several partitions (named ``input[partition]``)."""
    upstream = context.upstream_output
    metadata = (upstream.definition_metadata if upstream is not None else None) or {}
    expr = metadata.get(PARTITION_EXPR)
    if not context.has_asset_key:
        return [Part(tuple(upstream.get_identifier()), partition_expr=expr, name=context.name)]
    asset_key = context.asset_key
    key_path = tuple(asset_key.path)
    if not context.has_asset_partitions:
        return [Part(key_path, asset_key, None, expr, context.name)]
    keys = list(context.asset_partition_keys)
    if len(keys) == 1:
        return [Part(key_path, asset_key, keys[0], expr, context.name)]
    return [Part(key_path, asset_key, key, expr, f"{context.name}[{key}]", True) for key in keys]


class InputRead:
    """One input loaded through ``storage`` for a step's ``session``, hashed and verified as
    ``resource`` says."""

    def __init__(
        self,
        resource: PipelineSettings,
        storage: Storage,
        context: dg.InputContext,
        session: StepSession,
        access: StoreAccess,
    ):
        self.resource = resource
        self.storage = storage
        self.context = context
        self.session = session
        self.access = access

    def load(self) -> Any:
        """The stored frame(s) as the annotated type (else the written type); several
        partitions as ``{partition key: frame}``."""
        context = self.context
        wanted = annotated_frame_type(context.dagster_type)
        parts = self.storage.fetch(context, input_parts(context))
        allow_missing = bool(context.definition_metadata.get("allow_missing_partitions", False))
        frames: dict[Any, Any] = {}
        for part in parts:
            try:
                frames[part.partition_key] = self.load_part(part, wanted)
            except FileNotFoundError:
                if part.partition_key is None or not allow_missing:
                    raise
                context.log.warning(
                    f"partition {part.partition_key} of {part.asset_key.to_user_string()} "
                    "is missing"
                )
        if not any(part.one_of_several for part in parts):
            return frames.get(parts[0].partition_key)
        if self.storage.combines_partition_reads and self.resource.hash_inputs and frames:
            _add_combined_input(self.session, context.name, context.asset_key, list(frames))
        return frames

    def load_part(self, part: Part, wanted: Any) -> Any:
        """One part read, its input step recorded (UnverifiedReadError when its rows differ
        from the recorded digest and verify_reads says to fail)."""
        resource = self.resource
        run_id = self.session.dagster_run_id
        latest = latest_materialisation(self.context, part.asset_key, part.partition_key, run_id)
        recorded = receipt_of(latest, part.asset_key, self.access) if resource.hash_inputs else None
        by_bytes = recorded.bytes_algorithm() if recorded is not None else None
        if resource.verify_reads == "rows":
            by_bytes = None  # the rows are hashed on every read
        read = self.storage.read(self.context, ReadRequest(part, latest, wanted, by_bytes))
        step, mismatch = self.input_step(read, part, recorded, by_bytes)
        if read.loaded.source_version is not None:
            step.source_version = read.loaded.source_version
        asset_text = "/".join(part.asset_key.path) if part.asset_key is not None else None
        self.session.add_input(
            LoadedInput(step=step, asset_key=asset_text, input_name=self.context.name),
            read_seconds=round(read.loaded.read_seconds, 6),
            reader=f"{read.reader}-{read.format}",
        )
        if mismatch is not None:
            raise UnverifiedReadError(mismatch)
        return read.loaded.frame

    def input_step(
        self, read: StoredRead, part: Part, recorded: RecordedOutput | None, by_bytes: str | None
    ) -> tuple[StepRecord, str | None]:
        """The part's input step: not hashed, proven by its stored bytes, or hashed now and
        verified (with the error message when the step must fail)."""
        loaded, storage, location = read.loaded, read.format, read.location
        if not self.resource.hash_inputs:
            step = StepRecord(
                name=part.name,
                direction="input",
                format=storage,
                location=location,
                source_note="not hashed: hash_inputs is off",
            )
            return step, None
        if by_bytes and loaded.same_rules_as_writer and loaded.bytes_hash == recorded.bytes_hash:
            return recorded.proven_input(part.name, storage, location, loaded.bytes_seconds), None
        return self.hash_and_verify(read, part, recorded)

    def hash_and_verify(
        self, read: StoredRead, part: Part, recorded: RecordedOutput | None
    ) -> tuple[StepRecord, str | None]:
        """The input step from its rows, hashed now, and (unless verify_reads is off) the error
        message when they differ from the recorded digest and the step must fail."""
        loaded = read.loaded
        started = time.perf_counter()
        fp = loaded.fingerprint()
        step = StepRecord.from_fingerprint(
            fp,
            name=part.name,
            direction="input",
            format=read.format,
            location=read.location,
            hash_seconds=round(time.perf_counter() - started, 6),
            hash_basis=loaded.hash_basis,
            bytes_hash=loaded.bytes_hash,
        )
        if self.resource.verify_reads == "off":
            return step, None
        mismatch = self.verify(step, read, part.asset_key, recorded)
        if loaded.bytes_hash is not None and step.source_note.startswith("verified"):
            step.source_note += " (its stored bytes differ from those written, so rows were hashed)"
        return step, mismatch

    def verify(
        self,
        step: StepRecord,
        read: StoredRead,
        asset_key: dg.AssetKey | None,
        recorded: RecordedOutput | None,
    ) -> str | None:
        """Hold the digest read against the one recorded when the data was written; returns the
        error message when the step must fail (the step record says what was found either way)."""
        loaded = read.loaded
        if not read.verifiable:
            step.source_note = (
                "not verified: several partitions were loaded as one object, and each partition "
                "has its own recorded digest"
            )
            return None
        if step.data_hash is None:  # nothing to hold against a record: Dagster is not asked
            step.source_note = f"not verified: the read could not be hashed ({step.hash_error})"
            return None
        expected, source = (recorded.data_hash, recorded.source) if recorded else (None, "")
        if expected is None and loaded.stored_data_hash:
            expected, source = loaded.stored_data_hash, "the note stored with the file"
        if expected is None:
            step.source_note = "not verified: no digest was recorded when it was written"
            return None
        if step.data_hash == expected:
            step.source_note = f"verified: the rows match the digest recorded by {source}"
            return None
        if not loaded.same_rules_as_writer and step.schema_hash != (
            loaded.stored_schema_hash or step.schema_hash
        ):
            step.source_note = (
                f"not verified: {loaded.writer} wrote it and this engine reads its types "
                "differently, so the digests are not comparable"
            )
            return None
        return self.refuse(step, read, asset_key, expected, source)

    def refuse(
        self,
        step: StepRecord,
        read: StoredRead,
        asset_key: dg.AssetKey | None,
        expected: str,
        source: str,
    ) -> str | None:
        """A read whose rows changed since they were written: the message when the step must
        fail, else a warning (verify_reads='warn')."""
        message = (
            f"{read.location} was changed after it was written: its rows now hash to "
            f"{step.data_hash}, but {source} recorded {expected} when it was written. "
            f"Rematerialise {asset_key.to_user_string() if asset_key else 'the upstream output'} "
            "(or set UbunyeResource(verify_reads='warn') to only warn)."
        )
        step.source_note = f"verification failed: {message}"
        if self.resource.verify_reads in ("fail", "rows"):
            return message
        self.context.log.warning(message)
        return None


def _add_combined_input(
    session: StepSession, name: str, asset_key: dg.AssetKey, partitions: list[str]
) -> None:
    """One more input step for several loaded partitions: their digests combined, no row hashed
    again (a retried load replaces it)."""
    by_name = {loaded.step.name: loaded.step for loaded in session.inputs}
    steps = [by_name[f"{name}[{key}]"] for key in partitions if f"{name}[{key}]" in by_name]
    combined = combined_input_step(name, steps, [str(key) for key in partitions])
    with session.lock:
        session.inputs = [known for known in session.inputs if known.step.name != name]
        session.inputs.append(
            LoadedInput(step=combined, asset_key="/".join(asset_key.path), input_name=name)
        )
