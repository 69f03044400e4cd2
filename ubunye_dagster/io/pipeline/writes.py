"""One output's write through a storage: staged, hashed where the rows are, passed by the gate,
committed (or discarded), its record closed, the receipt judged and given as the
materialisation's metadata."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any

import dagster as dg

from ubunye_core.locations import StoreAccess
from ubunye_core.materialisations.stored import DATA_HASH_KEY, SCHEMA_HASH_KEY, WRITER_KEY
from ubunye_core.records.model import StepRecord
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.io.handlers import FrameHandler, handler_for_object
from ubunye_dagster.io.handlers.base import PARTITION_EXPR, ReceiptRows, StagedWrite
from ubunye_dagster.io.pipeline.observers import WriteObservers
from ubunye_dagster.io.storage.base import Part, Storage
from ubunye_dagster.receipts import subjects
from ubunye_dagster.receipts.materialisations import Materialised, remember_written
from ubunye_dagster.receipts.metadata import output_metadata, plain
from ubunye_dagster.receipts.records import OpenRecord, PipelineSettings, close_record
from ubunye_dagster.receipts.saved import Judged, SavedReceipt
from ubunye_dagster.receipts.session import LoadedInput, StepSession, asset_record, open_session
from ubunye_rows.hashing import Fingerprint


class NoOutputError(TypeError):
    """An output reached the IO manager as None: nothing to store, nothing to receipt."""

    def __init__(self, step_name: str):
        super().__init__(
            f"{step_name} returned None, so there is nothing to store and no receipt to write "
            "(left alone, Dagster would log a materialisation and downstream assets would read "
            "the previous data as if it were new). Return the frame; an asset that stores "
            "nothing itself is annotated '-> None', or returns dg.MaterializeResult(...) "
            "(with UbunyeResource.record_output for data it wrote elsewhere)."
        )


def write_output(
    resource: PipelineSettings,
    storage: Storage,
    context: dg.OutputContext,
    obj: Any,
    access: StoreAccess,
    observers: WriteObservers,
) -> None:
    """Stage, hash, pass the gate, then atomically write ``obj``, save the asset's record (an
    ``error`` record, and a failed step, when any of it fails, ``None`` included), and give the
    receipt as metadata with the judge's verdict (records read through ``access``)."""
    session = open_session(context.step_context)
    with session.lock:
        transform = session.transform_timing(context.op_def.name)
        target = output_target(resource, context, session)
        write = Write(target.step_name)
        try:
            write.stage_and_check(storage, obj, target.part, context, observers)
            write.commit()
        except BaseException as exc:
            write.discard()
            target.record_failure(session, write, transform, exc)
            if observers.gate is not None:
                observers.gate.refused(context, exc)
            raise
        record_path, keys = target.record_success(session, write, transform)
    write.log_broken_warnings(context)
    write.log_stored_hash_error(context)
    judged = add_metadata(context, target, write, record_path, keys, access, observers)
    if judged is not None:
        judged.report()


def output_target(
    resource: PipelineSettings, context: dg.OutputContext, session: StepSession
) -> Target:
    """Where the output goes and the record it completes."""
    expr = (context.definition_metadata or {}).get(PARTITION_EXPR)
    if not context.has_asset_key:
        subject = subjects.step_op_subject(context.step_context, context.name)
        return Target(
            part=Part(tuple(context.get_identifier()), partition_expr=expr, name=context.name),
            open_record=session.record(subject, resource, context.name),
            step_name=context.name,
            inputs=session.inputs_of(None),
        )
    partition_key = internals.output_partition(context.step_context, context.name)
    open_record = asset_record(
        session, resource, context.asset_key, output_name=context.name, partition_key=partition_key
    )
    step_name = context.asset_key.to_user_string()
    part = Part(tuple(context.asset_key.path), context.asset_key, partition_key, expr, step_name)
    return Target(
        part=part,
        open_record=open_record,
        step_name=step_name,
        inputs=session.inputs_of(context.asset_key),
    )


def add_metadata(
    context: dg.OutputContext,
    target: Target,
    write: Write,
    record_path: str,
    input_asset_keys: dict[str, str | None],
    access: StoreAccess,
    observers: WriteObservers,
) -> Judged | None:
    """The receipt as the materialisation's metadata (the judge's first), and its digest as the
    data version; returns the judgement, whose report follows the metadata."""
    try:
        pairs = write.described.schema_pairs()
    except Exception:  # a type rows-v1 has no name for; the hash error already says so
        pairs = None
    partition_key = target.part.partition_key
    metadata = output_metadata(
        target.open_record.record,
        write.output_step(),
        record_path=record_path,
        input_asset_keys=input_asset_keys,
        schema_pairs=pairs,
        partition_key=partition_key,
        expectation_results=write.results,
    )
    judged = None
    if context.has_asset_key and observers.judge is not None:
        saved = SavedReceipt(
            partition_key=partition_key,
            record=target.open_record.record,
            output=write.output_step(),
            record_path=record_path,
            input_asset_keys=input_asset_keys,
            metadata=metadata,
        )
        judged = observers.judge.judge(context, saved, access)
        metadata = {**judged.metadata, **metadata}  # the judge's first: the entry people read
    # Keys the storage already stated (a wrapped IO manager's row count) keep its value.
    logged = context.get_logged_metadata()
    added = {k: v for k, v in metadata.items() if k not in logged}
    context.add_output_metadata(added)
    if context.has_asset_key:  # a later step of this run reads it from here
        given = {key: plain(value) for key, value in {**logged, **added}.items()}
        remember_written(context.asset_key, partition_key, Materialised(context.run_id, given))

    if write.fp.data_hash is not None and context.has_asset_key:
        # The materialisation's data version is its content: identical rows keep
        # downstream assets fresh, changed rows make them stale.
        internals.set_data_version(context.step_context, context.asset_key, write.fp.data_hash)
    return judged


@dataclass
class Target:
    """Where one output is written and the record it completes."""

    part: Part
    open_record: OpenRecord
    step_name: str
    inputs: list[LoadedInput]

    def record_failure(
        self, session: StepSession, write: Write, transform: dict[str, Any], exc: BaseException
    ) -> None:
        """Close the record ``error``: what was loaded, timed and checked, and the masked error."""
        if write.handler is not None:
            self.open_record.record.backend = write.handler.backend
        session.fill(
            self.open_record,
            self.inputs,
            extra_timings=write.timings(transform, committed=False),
            expectations=write.results,
        )
        close_record(self.open_record.record, "error", exc)
        self.open_record.save()
        self.open_record.closed = True

    def record_success(
        self, session: StepSession, write: Write, transform: dict[str, Any]
    ) -> tuple[str, dict[str, str | None]]:
        """Close the record ``success`` with its output; returns its path and the inputs' keys."""
        self.open_record.record.backend = write.handler.backend
        with contextlib.suppress(Exception):  # a type rows-v1 has no name for: no schema facet
            self.open_record.schemas[("output", write.step_name)] = write.described.schema_pairs()
        keys = session.fill(
            self.open_record,
            self.inputs,
            outputs=[write.output_step()],
            extra_timings=write.timings(transform, committed=True),
            expectations=write.results,
        )
        close_record(self.open_record.record, "success")
        path = self.open_record.save()
        self.open_record.closed = True
        return path, keys


class Write:
    """One output's write: staged, hashed, passed by the gate, then committed (or discarded,
    leaving the previous data in place)."""

    def __init__(self, step_name: str):
        self.handler: FrameHandler | None = None
        self.step_name = step_name
        self.staged: StagedWrite | None = None
        #: The rows the receipt describes, as the writer offered them (staged, or stored).
        self.described: ReceiptRows | None = None
        #: True when the writer offered them only once committed: hashed where they are kept.
        self.hashed_where_stored = False
        self.fp: Fingerprint | None = None
        self.hash_seconds = 0.0
        self.results: list[dict[str, Any]] = []
        self._output_step: StepRecord | None = None

    def stage_and_check(
        self,
        storage: Storage,
        obj: Any,
        part: Part,
        context: dg.OutputContext,
        observers: WriteObservers,
    ) -> None:
        """Stage ``obj`` as ``part`` with the storage's handler for its type, hash the rows the
        writer offers as staged and pass them through the gate (NoOutputError for None,
        TypeError for an object no handler stores, the gate's refusal)."""
        if obj is None:
            raise NoOutputError(self.step_name)
        self.handler = handler_for_object(storage.handlers(), obj)
        self.staged = storage.stage(part, self.handler, obj, context)
        self.describe(self.staged.hashed_as_staged())
        gate = observers.gate
        if gate is not None:
            self.results = gate.check(context, self.staged.rows.rows_view, self.step_name)
            refusal = gate.refusal(self.step_name, self.results)
            if refusal is not None:
                raise refusal

    def describe(self, rows: ReceiptRows | None, *, stored: bool = False) -> None:
        """Hash, timed, the first rows the writer offers (``stored``: once committed, where
        they are kept) as those the receipt describes."""
        if rows is None or self.described is not None:
            return
        self.described = rows
        self.hashed_where_stored = stored
        started = time.perf_counter()
        self.fp = rows.fingerprint()
        self.hash_seconds = round(time.perf_counter() - started, 6)
        if self.fp.sketch is not None and not stored:
            # Packed for the record now, while the encoder may still be writing the rows.
            self.fp.sketch.packed_buckets()

    def commit(self) -> None:
        """Move the staged data into place, with the writer's notes (its hash, when hashed as
        staged; else hashed where it now is)."""
        notes = {WRITER_KEY: self.handler.kind}
        if self.fp is not None:
            notes[SCHEMA_HASH_KEY] = self.fp.schema_hash
            if self.fp.data_hash is not None:
                notes[DATA_HASH_KEY] = self.fp.data_hash
        self._output_step = None  # the commit sets the byte digest the step carries
        self.describe(self.staged.commit(notes), stored=True)

    def discard(self) -> None:
        """Drop what was staged (nothing was written in place), and the rows with it."""
        self.described = None
        if self.staged is not None:
            self.staged.discard()

    def timings(self, transform: dict[str, Any], *, committed: bool) -> list[dict[str, Any]]:
        """The transform's timing, then the write's (a failed write's only if it wrote)."""
        seconds = self.staged.write_watch.seconds if self.staged is not None else 0.0
        if not committed and not seconds:
            return [transform]
        step = f"Writer:{self.handler.kind}-{self.staged.format}"
        return [transform, {"step": step, "output": self.step_name, "seconds": round(seconds, 6)}]

    def output_step(self) -> StepRecord:
        """The output as the record's step, built once after the commit: the record, its
        metadata and the summary share it."""
        if self._output_step is None:
            self._output_step = self._built_output_step()
        return self._output_step

    def _built_output_step(self) -> StepRecord:
        step = StepRecord.from_fingerprint(
            self.fp,
            name=self.step_name,
            direction="output",
            format=self.staged.format,
            location=self.staged.location,
            hash_seconds=self.hash_seconds,
            hash_basis="materialised",
            bytes_hash=self.staged.bytes_hash,
        )
        step.source_version = self.staged.source_version()
        return step

    def log_stored_hash_error(self, context: dg.OutputContext) -> None:
        """A warning when the rows were stored but could not be hashed where they are: the
        step succeeds, and its receipt has no data hash."""
        if self.hashed_where_stored and self.fp.error is not None:
            context.log.warning(
                f"{self.step_name} was stored at {self.staged.location}, but its rows could not "
                f"be hashed there, so its receipt has no data hash: {self.fp.error}"
            )

    def log_broken_warnings(self, context: dg.OutputContext) -> None:
        """A warning for each broken rule of severity ``warn``."""
        for entry in self.results:
            if not entry["passed"]:
                context.log.warning(
                    f"{self.step_name}: expectation {entry['rule']} ({entry['kind']}) broken by "
                    f"{entry['failed']} of {entry['total']} rows (severity warn)"
                )
