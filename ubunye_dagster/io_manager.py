"""UbunyeIOManager: Parquet on any UPath, and a receipt for every read and write.

Paths follow Dagster's ``UPathIOManager``: ``<base_path>/<asset key parts>.parquet`` for an
unpartitioned asset and ``<base_path>/<asset key parts>/<partition>.parquet`` for a partition
(a multi-partition key is its dimension keys, ordered by dimension name, as folders). Spark
writes the same path as a folder of part files.
"""

from __future__ import annotations

import collections.abc
import contextlib
import os
import re
import time
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import dagster as dg
from pydantic import Field, PrivateAttr, model_validator

from ubunye_core.materialisations.stored import DATA_HASH_KEY, SCHEMA_HASH_KEY, WRITER_KEY
from ubunye_core.records.model import StepRecord
from ubunye_core.records.sketches import combined_input_step
from ubunye_core.store import encode_name
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.early_failures import record_early_failures
from ubunye_dagster.expectation_checks import evaluation_metadata
from ubunye_dagster.expectations import (
    ExpectationFailed,
    Rule,
    broken_fail_rules,
    check_rules,
    parse_rules,
)
from ubunye_dagster.handlers import (
    FrameHandler,
    arrow_files,
    default_handlers,
    handler_for_kind,
    handler_for_object,
    handler_for_type,
)
from ubunye_dagster.handlers.base import LoadedFrame, StagedWrite
from ubunye_dagster.handlers.delta import DeltaHandler, delta_handlers, delta_writer, is_delta_table
from ubunye_dagster.metadata import EXPECTATIONS, output_metadata
from ubunye_dagster.recorded import RecordedOutput, latest_materialisation, receipt_of, stored_at
from ubunye_dagster.records import OpenRecord, close_record
from ubunye_dagster.reproducibility import report_reproducibility
from ubunye_dagster.resource import UbunyeResource
from ubunye_dagster.session import (
    LoadedInput,
    StepSession,
    asset_record,
    close_run,
    open_session,
    save_running_records,
)
from ubunye_dagster.strict_fields import refuse_unknown_fields
from ubunye_dagster.summary import summary_metadata
from ubunye_rows.hashing import Fingerprint

EXTENSION = ".parquet"
_PLAIN_SEGMENT = re.compile(r"^[A-Za-z0-9_=+@,-][A-Za-z0-9_.=+@,-]*$")


class UnverifiedReadError(Exception):
    """An input's rows differ from what was recorded when it was written."""


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


def path_segment(text: str) -> str:
    """A key part or partition key as one safe path segment (odd ones name-encoded)."""
    text = str(text)
    return text if _PLAIN_SEGMENT.match(text) and text not in (".", "..") else encode_name(text)


def partition_parts(partition_key: str) -> list[str]:
    """Folders/file name of a partition: one, or a multi-partition key's dimension keys in
    dimension-name order (as ``UPathIOManager`` lays them out)."""
    by_dimension = getattr(partition_key, "keys_by_dimension", None)
    if by_dimension:
        return [path_segment(by_dimension[name]) for name in sorted(by_dimension)]
    return [path_segment(partition_key)]


def annotated_frame_type(dagster_type: Any) -> Any:
    """The frame type an input is annotated with (the value type of ``dict[str, T]``), or None."""
    typing_type = getattr(dagster_type, "typing_type", None)
    if typing.get_origin(typing_type) in (dict, collections.abc.Mapping):
        args = typing.get_args(typing_type)
        typing_type = args[1] if len(args) == 2 else None
    return typing_type if isinstance(typing_type, type) and typing_type is not object else None


class UbunyeIOManager(dg.ConfigurableIOManager):
    """Stores pandas, pyarrow, polars and Spark frames as Parquet and records each read and write.

    Every materialisation gets a run record (v2) in the lineage store and its receipt as
    metadata; its Dagster data version is the rows' rows-v1 digest.
    """

    @model_validator(mode="before")
    @classmethod
    def _known_fields_only(cls, data: Any) -> Any:
        elsewhere = {
            name: f"a UbunyeResource field: UbunyeIOManager(ubunye=UbunyeResource({name}=...))"
            for name in UbunyeResource.model_fields
            if name not in cls.model_fields
        }
        return refuse_unknown_fields(cls, data, belongs_to=elsewhere)

    base_path: str = Field(
        default="data",
        description="Folder or fsspec URL (s3://, gs://, memory://) the data is stored under; "
        "a relative path is taken from the run's working directory.",
    )
    storage_options: dict[str, Any] = Field(
        default_factory=dict, description="fsspec options for base_path (credentials, endpoint)."
    )
    ubunye: UbunyeResource | None = Field(
        default=None, description="Record settings; UbunyeResource() defaults when left out."
    )
    spark_resource_key: str = Field(
        default="pyspark",
        description="Resource key of a dagster-pyspark PySparkResource whose session Spark "
        "inputs are read with; the active session when the step has none.",
    )
    format: Literal["parquet", "delta"] = Field(
        default="parquet",
        description="How pandas, pyarrow and polars frames are stored: Parquet files, or Delta "
        "Lake tables (a new table version per materialisation; needs the deltalake package). "
        "Spark frames are stored as Parquet either way.",
    )

    _handler_list: list[FrameHandler] | None = PrivateAttr(default=None)

    # --- the resource and paths ------------------------------------------------------------

    @property
    def resource(self) -> UbunyeResource:
        """The ``UbunyeResource`` in force (its defaults when none was given)."""
        return self.ubunye if self.ubunye is not None else UbunyeResource()

    def handlers(self) -> list[FrameHandler]:
        """The frame handlers, pandas first."""
        if self._handler_list is None:
            handlers = default_handlers(self.spark_resource_key)
            if self.format == "delta":
                handlers = delta_handlers(handlers, self.storage_options)
            self._handler_list = handlers
        return self._handler_list

    def base(self) -> Any:
        """``base_path`` as a UPath (absolute when local)."""
        from upath import UPath

        base = UPath(self.base_path, **self.storage_options)
        if arrow_files.is_local(base):
            base = UPath(os.path.abspath(base.path))
        return base

    def _asset_path(self, asset_key: dg.AssetKey, partition_key: str | None) -> Any:
        parts = [path_segment(part) for part in asset_key.path]
        if partition_key is None:
            parts[-1] += EXTENSION
        else:
            parts += partition_parts(partition_key)
            parts[-1] += EXTENSION
        return self.base().joinpath(*parts)

    def _stored_path(self, location: str) -> Any:
        """A location an external writer stated, as a UPath with this IO manager's options."""
        from upath import UPath

        return UPath(location, **self.storage_options)

    def _table_path(self, parts: Sequence[str]) -> Any:
        """Where a Delta table is kept: ``<base_path>/<key parts>.delta``; None for Parquet."""
        if self.format != "delta":
            return None
        segments = [path_segment(part) for part in parts]
        segments[-1] += ".delta"
        return self.base().joinpath(*segments)

    def _op_path(self, identifier: Sequence[str]) -> Any:
        parts = [path_segment(part) for part in identifier]
        parts[-1] += EXTENSION
        return self.base().joinpath(*parts)

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        """Close the records of this run's steps still open in this process: a step that failed
        after loading its inputs gets its ``error`` record.

        Dagster tears resources down whether or not a step failed (once per run in-process, once
        per step in a step's own process), and never calls ``handle_output`` after a failure. A
        step that fails before touching the IO manager is recorded by ``with_error_records``, or
        here when its asset definition is watched (``watch_early_failures``: the component).
        """
        if context.run is not None:
            close_run(context.run.run_id)
            record_early_failures(
                context.instance, context.run, self.resource, self.resource.model_dump_json()
            )

    # --- write -----------------------------------------------------------------------------

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        """Stage, hash, check, then atomically write ``obj``, save the asset's record (an
        ``error`` record, and a failed step, when any of it fails, ``None`` included) and give
        its ``ubunye_reproducible`` verdict when the run evaluates that check."""
        session = open_session(context.step_context)
        with session.lock:
            transform = session.transform_timing(context.op_def.name)
            target = self._target(context, session)
            rules = parse_rules(context.definition_metadata.get(EXPECTATIONS))
            write = _Write(target.step_name, rules)
            try:
                write.stage_and_check(self.handlers(), obj, target, context)
                write.commit()
            except BaseException as exc:
                write.discard()
                target.record_failure(session, write, transform, exc)
                if isinstance(exc, ExpectationFailed) and context.has_asset_key:
                    report_refused_write(context, exc)
                raise
            record_path, keys = target.record_success(session, write, transform)
        write.log_broken_warnings(context)
        self._add_metadata(context, target, write, record_path, keys)
        if context.has_asset_key:
            report_reproducibility(context, target.partition_key)

    def _target(self, context: dg.OutputContext, session: StepSession) -> _Target:
        """Where the output goes and the record it completes."""
        if not context.has_asset_key:
            subject = internals.step_op_subject(context.step_context, context.name)
            return _Target(
                path=self._op_path(context.get_identifier()),
                open_record=session.record(subject, self.resource, context.name),
                step_name=context.name,
                inputs=session.inputs_of(None),
                table_path=self._table_path(context.get_identifier()),
            )
        partition_key = internals.output_partition(context.step_context, context.name)
        open_record = asset_record(
            session,
            self.resource,
            context.asset_key,
            output_name=context.name,
            partition_key=partition_key,
        )
        return _Target(
            path=self._asset_path(context.asset_key, partition_key),
            open_record=open_record,
            step_name=context.asset_key.to_user_string(),
            inputs=session.inputs_of(context.asset_key),
            partition_key=partition_key,
            table_path=self._table_path(context.asset_key.path),
        )

    @staticmethod
    def _add_metadata(
        context: dg.OutputContext,
        target: _Target,
        write: _Write,
        record_path: str,
        input_asset_keys: dict[str, str | None],
    ) -> None:
        """The receipt as the materialisation's metadata, and its digest as the data version."""
        try:
            pairs = write.staged.schema_pairs()
        except Exception:  # a type rows-v1 has no name for; the hash error already says so
            pairs = None
        metadata = output_metadata(
            target.open_record.record,
            write.output_step(),
            record_path=record_path,
            input_asset_keys=input_asset_keys,
            schema_pairs=pairs,
            partition_key=target.partition_key,
            expectation_results=write.results,
        )
        if context.has_asset_key:  # the summary first: the entry people read
            metadata = {
                **summary_metadata(
                    internals.instance_of(context.step_context),
                    context.asset_key,
                    target.partition_key,
                    target.open_record.record,
                    write.output_step(),
                    record_path=record_path,
                    input_asset_keys=input_asset_keys,
                ),
                **metadata,
            }
        # Keys the storage already stated (a wrapped IO manager's row count) keep its value.
        logged = context.get_logged_metadata()
        context.add_output_metadata({k: v for k, v in metadata.items() if k not in logged})
        if write.fp.data_hash is not None and context.has_asset_key:
            # The materialisation's data version is its content: identical rows keep
            # downstream assets fresh, changed rows make them stale.
            internals.set_data_version(context.step_context, context.asset_key, write.fp.data_hash)

    # --- read ------------------------------------------------------------------------------

    def load_input(self, context: dg.InputContext) -> Any:
        """Load the stored frame(s) as the annotated type (else the written type), hashing and
        verifying each as configured; several partitions load as ``{partition key: frame}``."""
        session = open_session(context.step_context)
        wanted = annotated_frame_type(context.dagster_type)
        try:
            return self._load(context, session, wanted)
        finally:
            # Even when this load failed, the step's record shows what it had loaded.
            save_running_records(session, self.resource)

    def _load(
        self,
        context: dg.InputContext,
        session: StepSession,
        wanted: Any,
    ) -> Any:
        if not context.has_asset_key:
            identifier = context.upstream_output.get_identifier()
            path, table = self._op_path(identifier), self._table_path(identifier)
            return self._load_one(context, session, path, context.name, None, None, wanted, table)
        asset_key = context.asset_key
        table = self._table_path(asset_key.path)
        if not context.has_asset_partitions:
            path = self._asset_path(asset_key, None)
            return self._load_one(
                context, session, path, context.name, asset_key, None, wanted, table
            )
        keys = list(context.asset_partition_keys)
        allow_missing = bool(context.definition_metadata.get("allow_missing_partitions", False))
        frames: dict[str, Any] = {}
        for key in keys:
            name = context.name if len(keys) == 1 else f"{context.name}[{key}]"
            path = self._asset_path(asset_key, key)
            try:
                frames[key] = self._load_one(
                    context, session, path, name, asset_key, key, wanted, table
                )
            except FileNotFoundError:
                if not allow_missing:
                    raise
                context.log.warning(f"partition {key} of {asset_key.to_user_string()} is missing")
        if len(keys) == 1:
            return frames.get(keys[0])
        if self.resource.hash_inputs and frames:
            _add_combined_input(session, context.name, asset_key, list(frames))
        return frames

    def _reader_for(self, path: Any, wanted: Any) -> FrameHandler:
        handler = handler_for_type(self.handlers(), wanted) if wanted is not None else None
        if handler is not None:
            return handler
        writer = _stored_writer(path)
        return handler_for_kind(self.handlers(), writer) or self.handlers()[0]

    def _read(
        self,
        context: dg.InputContext,
        path: Any,
        table_path: Any,
        partition_key: Any,
        wanted: Any,
        digest_with: str | None,
    ) -> tuple[FrameHandler, LoadedFrame, Any]:
        """The stored frame, its handler and where it was: the Delta table's latest version
        when there is one at ``table_path``, else what is at ``path``."""
        if table_path is not None and is_delta_table(table_path):
            handler = handler_for_type(self.handlers(), wanted) if wanted is not None else None
            if handler is None:
                writer = delta_writer(table_path, self.storage_options)
                handler = handler_for_kind(self.handlers(), writer) or self.handlers()[0]
            if not isinstance(handler, DeltaHandler):
                raise TypeError(
                    f"{table_path} is a Delta table; {handler.kind} frames read Parquet"
                )
            loaded = handler.load_partition(table_path, context, wanted, partition_key)
            return handler, loaded, table_path
        handler = self._reader_for(path, wanted)
        return handler, handler.load(path, context, wanted, digest_with=digest_with), path

    def _load_one(
        self,
        context: dg.InputContext,
        session: StepSession,
        path: Any,
        name: str,
        asset_key: dg.AssetKey | None,
        partition_key: str | None,
        wanted: Any,
        table_path: Any = None,
    ) -> Any:
        resource = self.resource
        latest = latest_materialisation(context, asset_key, partition_key)
        recorded = receipt_of(latest, asset_key) if resource.hash_inputs else None
        written_at = stored_at(latest)
        if written_at is not None:  # written outside this IO manager, where its receipt says
            path = table_path = self._stored_path(written_at)
        by_bytes = recorded.bytes_algorithm() if recorded is not None else None
        if resource.verify_reads == "rows":
            by_bytes = None  # the rows are hashed on every read
        handler, loaded, path = self._read(
            context, path, table_path, partition_key, wanted, by_bytes
        )
        mismatch = None
        if not resource.hash_inputs:
            step = StepRecord(
                name=name,
                direction="input",
                format=handler.storage,
                location=str(path),
                source_note="not hashed: hash_inputs is off",
            )
        elif by_bytes and loaded.same_rules_as_writer and loaded.bytes_hash == recorded.bytes_hash:
            step = recorded.proven_input(name, handler.storage, str(path), loaded.bytes_seconds)
        else:
            step, mismatch = self._hash_and_verify(
                context, loaded, name, handler.storage, path, asset_key, recorded
            )
        if loaded.source_version is not None:
            step.source_version = loaded.source_version
        asset_text = "/".join(asset_key.path) if asset_key is not None else None
        session.add_input(
            LoadedInput(step=step, asset_key=asset_text, input_name=context.name),
            read_seconds=round(loaded.read_seconds, 6),
            reader=f"{handler.kind}-{handler.storage}",
        )
        if mismatch is not None:
            raise UnverifiedReadError(mismatch)
        return loaded.frame

    def _hash_and_verify(
        self,
        context: dg.InputContext,
        loaded: LoadedFrame,
        name: str,
        storage: str,
        path: Any,
        asset_key: dg.AssetKey | None,
        recorded: RecordedOutput | None,
    ) -> tuple[StepRecord, str | None]:
        """The input step from its rows, hashed now, and (unless verify_reads is off) the error
        message when they differ from the recorded digest and the step must fail."""
        started = time.perf_counter()
        fp = loaded.fingerprint()
        step = StepRecord.from_fingerprint(
            fp,
            name=name,
            direction="input",
            format=storage,
            location=str(path),
            hash_seconds=round(time.perf_counter() - started, 6),
            hash_basis=loaded.hash_basis,
            bytes_hash=loaded.bytes_hash,
        )
        if self.resource.verify_reads == "off":
            return step, None
        mismatch = self._verify(context, step, loaded, path, asset_key, recorded)
        if loaded.bytes_hash is not None and step.source_note.startswith("verified"):
            step.source_note += " (its stored bytes differ from those written, so rows were hashed)"
        return step, mismatch

    def _verify(
        self,
        context: dg.InputContext,
        step: StepRecord,
        loaded: LoadedFrame,
        path: Any,
        asset_key: dg.AssetKey | None,
        recorded: RecordedOutput | None,
    ) -> str | None:
        """Hold the digest read against the one recorded when the data was written; returns the
        error message when the step must fail (the step record says what was found either way)."""
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
        message = (
            f"{path} was changed after it was written: its rows now hash to {step.data_hash}, "
            f"but {source} recorded {expected} when it was written. Rematerialise "
            f"{asset_key.to_user_string() if asset_key else 'the upstream output'} (or set "
            "UbunyeResource(verify_reads='warn') to only warn)."
        )
        step.source_note = f"verification failed: {message}"
        if self.resource.verify_reads in ("fail", "rows"):
            return message
        context.log.warning(message)
        return None


@dataclass
class _Target:
    """Where one output is written and the record it completes."""

    path: Any
    open_record: OpenRecord
    step_name: str
    inputs: list[LoadedInput]
    partition_key: str | None = None
    #: Where a Delta table of the output is kept (``format="delta"`` only).
    table_path: Any = None

    def record_failure(
        self, session: StepSession, write: _Write, transform: dict[str, Any], exc: BaseException
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
        self, session: StepSession, write: _Write, transform: dict[str, Any]
    ) -> tuple[str, dict[str, str | None]]:
        """Close the record ``success`` with its output; returns its path and the inputs' keys."""
        self.open_record.record.backend = write.handler.backend
        with contextlib.suppress(Exception):  # a type rows-v1 has no name for: no schema facet
            self.open_record.schemas[("output", write.step_name)] = write.staged.schema_pairs()
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


class _Write:
    """One output's write: staged, hashed, checked against its rules, then committed (or
    discarded, leaving the previous data in place)."""

    def __init__(self, step_name: str, rules: list[Rule]):
        self.handler: FrameHandler | None = None
        self.step_name = step_name
        self.rules = rules
        self.staged: StagedWrite | None = None
        self.fp: Fingerprint | None = None
        self.hash_seconds = 0.0
        self.results: list[dict[str, Any]] = []
        self._output_step: StepRecord | None = None

    def stage_and_check(
        self, handlers: list[FrameHandler], obj: Any, target: _Target, context: dg.OutputContext
    ) -> None:
        """Stage ``obj`` for ``target`` with the handler for its type (a Delta table's next
        version, or beside the Parquet path), hash it and check the rules (NoOutputError for
        None, TypeError for an object no handler stores, ExpectationFailed when a rule of
        severity ``fail`` is broken)."""
        if obj is None:
            raise NoOutputError(self.step_name)
        self.handler = handler_for_object(handlers, obj)
        if isinstance(self.handler, DeltaHandler):
            self.staged = self.handler.stage_partition(
                obj, target.table_path, context, target.partition_key
            )
        else:
            self.staged = self.handler.stage(obj, target.path, context)
        started = time.perf_counter()
        self.fp = self.staged.fingerprint()
        self.hash_seconds = round(time.perf_counter() - started, 6)
        if self.rules:
            self.results = check_rules(self.rules, self.staged.rule_counter(), self.step_name)
        broken = broken_fail_rules(self.results)
        if broken:
            raise ExpectationFailed(self.step_name, broken)

    def commit(self) -> None:
        """Move the staged data into place, with the writer's notes."""
        notes = {WRITER_KEY: self.handler.kind, SCHEMA_HASH_KEY: self.fp.schema_hash}
        if self.fp.data_hash is not None:
            notes[DATA_HASH_KEY] = self.fp.data_hash
        self._output_step = None  # the commit sets the byte digest the step carries
        self.staged.commit(notes)

    def discard(self) -> None:
        """Drop what was staged (nothing was written in place)."""
        if self.staged is not None:
            self.staged.discard()

    def timings(self, transform: dict[str, Any], *, committed: bool) -> list[dict[str, Any]]:
        """The transform's timing, then the write's (a failed write's only if it wrote)."""
        seconds = self.staged.write_watch.seconds if self.staged is not None else 0.0
        if not committed and not seconds:
            return [transform]
        step = f"Writer:{self.handler.kind}-{self.handler.storage}"
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

    def log_broken_warnings(self, context: dg.OutputContext) -> None:
        """A warning for each broken rule of severity ``warn``."""
        for entry in self.results:
            if not entry["passed"]:
                context.log.warning(
                    f"{self.step_name}: expectation {entry['rule']} ({entry['kind']}) broken by "
                    f"{entry['failed']} of {entry['total']} rows (severity warn)"
                )


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


def report_refused_write(context: dg.OutputContext, refusal: ExpectationFailed) -> None:
    """The broken ``fail`` rules as failed blocking checks: the step fails, so the checks' own
    step never runs to report them (see ``expectation_checks``)."""
    evaluations = [
        dg.AssetCheckEvaluation(
            asset_key=context.asset_key,
            check_name=entry["rule"],
            passed=False,
            metadata=evaluation_metadata(entry),
            severity=dg.AssetCheckSeverity.ERROR,
            blocking=True,
            description="broken: the write was refused and the previous data stays in place",
        )
        for entry in refusal.broken
    ]
    internals.report_check_evaluations(context.step_context, evaluations)


def _stored_writer(path: Any) -> str | None:
    """Who wrote the materialisation at ``path`` (from its sidecar or Parquet footer)."""
    return arrow_files.stored_writer_notes(path).get(WRITER_KEY)
