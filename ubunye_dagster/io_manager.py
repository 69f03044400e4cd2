"""UbunyeIOManager: Parquet on any UPath, and a receipt for every read and write.

Paths follow Dagster's ``UPathIOManager``: ``<base_path>/<asset key parts>.parquet`` for an
unpartitioned asset and ``<base_path>/<asset key parts>/<partition>.parquet`` for a partition
(a multi-partition key is its dimension keys, ordered by dimension name, as folders). Spark
writes the same path as a folder of part files.
"""

from __future__ import annotations

import collections.abc
import os
import re
import time
import typing
from collections.abc import Sequence
from typing import Any

import dagster as dg
from pydantic import Field, PrivateAttr

from ubunye_core.record import StepRecord
from ubunye_dagster import recording
from ubunye_dagster.expectations import (
    ExpectationFailed,
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
from ubunye_dagster.handlers.base import DATA_HASH_KEY, SCHEMA_HASH_KEY, WRITER_KEY
from ubunye_dagster.identity import RecordIdentity, check_usecase, record_run_id
from ubunye_dagster.metadata import DATA_HASH, EXPECTATIONS, output_metadata
from ubunye_dagster.resource import UbunyeResource

EXTENSION = ".parquet"
_PLAIN_SEGMENT = re.compile(r"^[A-Za-z0-9_=+@,-][A-Za-z0-9_.=+@,-]*$")


class UnverifiedReadError(Exception):
    """An input's rows differ from what was recorded when it was written."""


def path_segment(text: str) -> str:
    """A key part or partition key as one safe path segment (odd ones name-encoded)."""
    from ubunye_core.store import encode_name

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

    _handler_list: list[FrameHandler] | None = PrivateAttr(default=None)

    # --- settings and paths ---------------------------------------------------------------

    @property
    def settings(self) -> UbunyeResource:
        """The record settings in force."""
        return self.ubunye if self.ubunye is not None else UbunyeResource()

    def handlers(self) -> list[FrameHandler]:
        """The frame handlers, pandas first."""
        if self._handler_list is None:
            self._handler_list = default_handlers(self.spark_resource_key)
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

    def _op_path(self, identifier: Sequence[str]) -> Any:
        parts = [path_segment(part) for part in identifier]
        parts[-1] += EXTENSION
        return self.base().joinpath(*parts)

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        """Finish the records of this run's steps that failed, whether after loading their inputs
        or before touching the IO manager at all.

        Dagster tears resources down whether or not a step failed (once per run in-process, once
        per step in a step's own process), and never calls ``handle_output`` after a failure, so
        this is where such records get their error.
        """
        recording.close_run_records(
            context,
            self.settings,
            claims=lambda job_def, keys, op_def, asset_node: asset_node.io_manager_key in keys,
        )

    # --- write -----------------------------------------------------------------------------

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        """Stage, hash, check, then atomically write ``obj``, and save the asset's record."""
        if obj is None:
            context.log.debug("UbunyeIOManager: the output is None; nothing stored or recorded")
            return
        settings = self.settings
        step_context = context.step_context
        session = recording.open_session(context.run_id, context.step_key, step_context)
        handler = handler_for_object(self.handlers(), obj)
        with session.lock:
            transform = session.transform_timing(context.op_def.name)
            if context.has_asset_key:
                partition_key = recording.output_partition(step_context, context.name)
                path = self._asset_path(context.asset_key, partition_key)
                open_record = recording.asset_record(
                    session,
                    settings,
                    asset_key=context.asset_key,
                    output_name=context.name,
                    partition_key=partition_key,
                )
                step_name = context.asset_key.to_user_string()
                input_names = recording.input_names_for(session, context.asset_key)
                unseen = recording.unseen_inputs(session, context.asset_key)
            else:
                partition_key = None
                path = self._op_path(context.get_identifier())
                open_record = self._op_record(session, context)
                step_name = context.name
                input_names, unseen = None, []
            rules = parse_rules(context.definition_metadata.get(EXPECTATIONS))
            self._write(
                context, handler, obj, path, open_record, session, step_name, rules,
                input_names, unseen, transform, partition_key,
            )  # fmt: skip

    def _write(
        self,
        context: dg.OutputContext,
        handler: FrameHandler,
        obj: Any,
        path: Any,
        open_record: recording.OpenRecord,
        session: recording.StepSession,
        step_name: str,
        rules: list[Any],
        input_names: list[str] | None,
        unseen: list[recording.LoadedInput],
        transform: dict[str, Any],
        partition_key: str | None,
    ) -> None:
        record = open_record.record
        record.backend = handler.backend
        staged = None
        results: list[dict[str, Any]] = []
        try:
            staged = handler.stage(obj, path, context)
            started = time.perf_counter()
            fp = staged.fingerprint()
            hash_seconds = round(time.perf_counter() - started, 6)
            if rules:
                results = check_rules(rules, staged.rule_counter(), step_name)
            broken = broken_fail_rules(results)
            if broken:
                raise ExpectationFailed(step_name, broken)
            notes = {WRITER_KEY: handler.kind, SCHEMA_HASH_KEY: fp.schema_hash}
            if fp.data_hash is not None:
                notes[DATA_HASH_KEY] = fp.data_hash
            staged.commit(notes)
        except BaseException as exc:
            if staged is not None:
                staged.discard()
            timings = [transform]
            if staged is not None and staged.write_watch.seconds:
                timings.append(self._write_timing(handler, step_name, staged.write_watch.seconds))
            recording.fill_steps(
                record, session, input_names=input_names, unseen=unseen,
                extra_timings=timings, expectations=results,
            )  # fmt: skip
            recording.finish(record, "error", exc)
            open_record.save()
            open_record.finished = True
            raise
        output = StepRecord.from_fingerprint(
            fp,
            name=step_name,
            direction="output",
            format=staged.format,
            location=staged.location,
            hash_seconds=hash_seconds,
            hash_basis="materialised",
        )
        keys = recording.fill_steps(
            record,
            session,
            input_names=input_names,
            unseen=unseen,
            outputs=[output],
            extra_timings=[
                transform,
                self._write_timing(handler, step_name, staged.write_watch.seconds),
            ],
            expectations=results,
        )
        recording.finish(record, "success")
        record_path = open_record.save()
        open_record.finished = True
        for entry in results:
            if not entry["passed"]:
                context.log.warning(
                    f"{step_name}: expectation {entry['rule']} ({entry['kind']}) broken by "
                    f"{entry['failed']} of {entry['total']} rows (severity warn)"
                )
        try:
            pairs = staged.schema_pairs()
        except Exception:  # a type rows-v1 has no name for; the hash error already says so
            pairs = None
        context.add_output_metadata(
            output_metadata(
                record,
                output,
                record_path=record_path,
                input_asset_keys=keys,
                schema_pairs=pairs,
                partition_key=partition_key,
                expectation_results=results,
            )
        )
        if fp.data_hash is not None and context.has_asset_key:
            # The materialisation's data version is its content: identical rows keep
            # downstream assets fresh, changed rows make them stale.
            context.step_context.set_data_version(context.asset_key, dg.DataVersion(fp.data_hash))

    @staticmethod
    def _write_timing(handler: FrameHandler, step_name: str, seconds: float) -> dict[str, Any]:
        return {
            "step": f"Writer:{handler.kind}-parquet",
            "output": step_name,
            "seconds": round(seconds, 6),
        }

    def _op_record(
        self, session: recording.StepSession, context: dg.OutputContext
    ) -> recording.OpenRecord:
        """The record of an op output (no asset): package = job name, task = ``<op>.<output>``."""
        from ubunye_core.store import encode_name, task_name_for_key

        settings = self.settings
        identity = RecordIdentity(
            usecase=check_usecase(settings.usecase),
            package=encode_name(context.job_name),
            task=task_name_for_key([context.op_def.name, context.name]),
            run_id=record_run_id(context.run_id),
        )
        existing = session.record_for(identity)
        if existing is not None:
            return existing
        step_context = context.step_context
        record = recording.new_record(
            identity,
            session,
            code_hash_value=session.code_hash_of(
                recording.code_folder_for(context.op_def, None, settings.code_folder)
            ),
            config_hash=recording.config_hash_of(step_context.op_config),
            variables=recording.run_variables(
                dagster_run_id=context.run_id,
                step_key=context.step_key,
                asset_key=None,
                partition_key=None,
                partition_dimensions=None,
                time_window=None,
                tags=dict(step_context.dagster_run.tags),
                job_name=context.job_name,
            ),
            model="op",
        )
        return session.keep(
            recording.OpenRecord(
                identity=identity, store=settings.store(), record=record, output_name=context.name
            )
        )

    # --- read ------------------------------------------------------------------------------

    def load_input(self, context: dg.InputContext) -> Any:
        """Load the stored frame(s) as the annotated type (else the written type), hashing and
        verifying each as configured; several partitions load as ``{partition key: frame}``."""
        settings = self.settings
        step_context = context.step_context
        session = recording.open_session(step_context.run_id, step_context.step.key, step_context)
        wanted = annotated_frame_type(context.dagster_type)
        try:
            return self._load(context, session, settings, wanted)
        finally:
            # Even when this load failed, the step's record shows what it had loaded.
            self._save_running(session, settings)

    def _load(
        self,
        context: dg.InputContext,
        session: recording.StepSession,
        settings: UbunyeResource,
        wanted: Any,
    ) -> Any:
        if not context.has_asset_key:
            path = self._op_path(context.upstream_output.get_identifier())
            return self._load_one(
                context, session, settings, path, context.name, None, None, wanted
            )
        asset_key = context.asset_key
        if not context.has_asset_partitions:
            path = self._asset_path(asset_key, None)
            return self._load_one(
                context, session, settings, path, context.name, asset_key, None, wanted
            )
        keys = list(context.asset_partition_keys)
        allow_missing = bool(context.definition_metadata.get("allow_missing_partitions", False))
        frames: dict[str, Any] = {}
        for key in keys:
            name = context.name if len(keys) == 1 else f"{context.name}[{key}]"
            path = self._asset_path(asset_key, key)
            try:
                frames[key] = self._load_one(
                    context, session, settings, path, name, asset_key, key, wanted
                )
            except FileNotFoundError:
                if not allow_missing:
                    raise
                context.log.warning(f"partition {key} of {asset_key.to_user_string()} is missing")
        if len(keys) == 1:
            return frames.get(keys[0])
        return frames

    def _save_running(self, session: recording.StepSession, settings: UbunyeResource) -> None:
        with session.lock:
            recording.open_running_records(session, settings)

    def _reader_for(self, path: Any, wanted: Any) -> FrameHandler:
        handler = handler_for_type(self.handlers(), wanted) if wanted is not None else None
        if handler is not None:
            return handler
        writer = _stored_writer(path)
        return handler_for_kind(self.handlers(), writer) or self.handlers()[0]

    def _load_one(
        self,
        context: dg.InputContext,
        session: recording.StepSession,
        settings: UbunyeResource,
        path: Any,
        name: str,
        asset_key: dg.AssetKey | None,
        partition_key: str | None,
        wanted: Any,
    ) -> Any:
        handler = self._reader_for(path, wanted)
        loaded = handler.load(path, context, wanted)
        mismatch = None
        asset_text = "/".join(asset_key.path) if asset_key is not None else None
        if settings.hash_inputs:
            started = time.perf_counter()
            fp = loaded.fingerprint()
            seconds = round(time.perf_counter() - started, 6)
            step = StepRecord.from_fingerprint(
                fp,
                name=name,
                direction="input",
                format="parquet",
                location=str(path),
                hash_seconds=seconds,
                hash_basis=loaded.hash_basis,
            )
            if settings.verify_reads != "off":
                mismatch = self._verify(
                    context, settings, step, loaded, path, asset_key, partition_key
                )
        else:
            step = StepRecord(
                name=name,
                direction="input",
                format="parquet",
                location=str(path),
                source_note="not hashed: hash_inputs is off",
            )
        session.add_input(
            recording.LoadedInput(step=step, asset_key=asset_text, input_name=context.name),
            read_seconds=round(loaded.read_seconds, 6),
            reader=f"{handler.kind}-parquet",
        )
        if mismatch is not None:
            raise UnverifiedReadError(mismatch)
        return loaded.frame

    def _verify(
        self,
        context: dg.InputContext,
        settings: UbunyeResource,
        step: StepRecord,
        loaded: Any,
        path: Any,
        asset_key: dg.AssetKey | None,
        partition_key: str | None,
    ) -> str | None:
        """Hold the digest read against the one recorded when the data was written; returns the
        error message when the step must fail (the step record says what was found either way)."""
        if step.data_hash is None:  # nothing to hold against a record: Dagster is not asked
            step.source_note = f"not verified: the read could not be hashed ({step.hash_error})"
            return None
        expected, source = _recorded_digest(context, asset_key, partition_key)
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
        if settings.verify_reads == "fail":
            return message
        context.log.warning(message)
        return None


def _stored_writer(path: Any) -> str | None:
    """Who wrote the materialisation at ``path`` (from its sidecar or Parquet footer)."""
    return arrow_files.stored_writer_notes(path).get(WRITER_KEY)


def _recorded_digest(
    context: dg.InputContext, asset_key: dg.AssetKey | None, partition_key: str | None
) -> tuple[str | None, str]:
    """The ``ubunye/data_hash`` of the asset's (partition's) latest materialisation in Dagster."""
    if asset_key is None:
        return None, ""
    try:
        records = context.instance.fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=asset_key,
                asset_partitions=[partition_key] if partition_key is not None else None,
            ),
            limit=1,
        ).records
    except Exception:  # an instance that cannot be asked (a context built in a test)
        return None, ""
    if not records:
        return None, ""
    materialization = records[0].asset_materialization
    value = materialization.metadata.get(DATA_HASH) if materialization else None
    digest = getattr(value, "value", value)
    if not digest:
        return None, ""
    return str(
        digest
    ), f"Dagster's materialisation of {asset_key.to_user_string()} (run {records[0].run_id})"
