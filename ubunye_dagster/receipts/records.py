"""Run records built and closed: identity, evidence, steps and status (no Dagster here).

What a record is about arrives as a :class:`Subject` (read from Dagster elsewhere); this module
turns it into a ``running`` record, fills its steps and closes it with its final status.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any, Protocol

from ubunye_core import __version__
from ubunye_core.paths import is_local
from ubunye_core.records.model import RunRecord, StepRecord
from ubunye_core.records.sketches import remember_saved
from ubunye_core.records.times import required_instant
from ubunye_core.store import LineageStore, task_name_for_key
from ubunye_dagster.receipts.identity import RecordIdentity, check_usecase, record_run_id
from ubunye_dagster.receipts.masking import mask_error, mask_tags
from ubunye_dagster.receipts.openlineage import send_finished_record
from ubunye_rows.evidence import code_hash, environment, environment_hash
from ubunye_rows.hashing.digest import prefixed_sha256

ENGINE_NAME = "ubunye-dagster"


class RecordPlace(Protocol):
    """Where records go and what code is hashed (``UbunyeResource`` is one)."""

    usecase: str
    code_folder: str | None

    def store(self) -> LineageStore: ...


class PipelineSettings(RecordPlace, Protocol):
    """What the IO managers' receipt pipeline reads of its settings (``UbunyeResource`` gives
    them): where records go, whether inputs are hashed and how their reads are verified."""

    hash_inputs: bool
    verify_reads: str
    storage_options: dict[str, Any]

    def model_dump_json(self) -> str: ...


@dataclass(frozen=True)
class Subject:
    """What one record is about, as Dagster describes it: the asset (or op output), its package,
    partition, code, config and the run's tags."""

    dagster_run_id: str
    step_key: str
    #: The package (an asset's group or an op's job), name-encoded.
    package: str
    #: The task's key parts: the asset key, or ``(op, output)``.
    key_parts: tuple[str, ...]
    model: str = "asset"
    partition_key: str | None = None
    partition_dimensions: Mapping[str, str] | None = None
    time_window: tuple[datetime, datetime] | None = None
    #: The ``ubunye/code_folder`` the asset was defined with (wins over the resource's).
    declared_code_folder: str | None = None
    #: The folder of the module defining the op's function.
    function_folder: str | None = None
    op_config: Any = None
    code_version: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    job_name: str | None = None

    @property
    def asset_key(self) -> str | None:
        """The asset key as ``a/b`` (None for an op output)."""
        return "/".join(self.key_parts) if self.model == "asset" else None

    def identity(self, usecase: str) -> RecordIdentity:
        """The record identity of this subject under ``usecase``."""
        return RecordIdentity(
            usecase=check_usecase(usecase),
            package=self.package,
            task=task_name_for_key(list(self.key_parts)),
            run_id=record_run_id(self.dagster_run_id, self.partition_key),
        )

    def code_folder(self, place: RecordPlace) -> str | None:
        """The code hashed: the asset's setting, else the resource's, else the function's folder."""
        return self.declared_code_folder or place.code_folder or self.function_folder


@dataclass
class OpenRecord:
    """An asset's (or op output's) record while its step runs, and where it is saved."""

    identity: RecordIdentity
    store: LineageStore
    record: RunRecord
    #: The Dagster output that materialises it (None for a record opened by the resource).
    output_name: str | None = None
    #: The asset key as ``a/b``, to pick the inputs that belong to this asset.
    asset_key: str | None = None
    #: Set once the record has its final status.
    closed: bool = False
    #: Columns of the record's steps, ``(direction, step name) -> [(column, type)]``, for lineage.
    schemas: dict[tuple[str, str], list[tuple[str, str]]] = field(default_factory=dict)
    #: Set once the finished record's OpenLineage events were handed to the client.
    lineage_sent: bool = False

    def save(self) -> str:
        """Write the record (atomically) and return its path; the first save of a finished
        record also emits its OpenLineage events (when OpenLineage is configured). The index learns
        of a finished record on the store's index thread; a ``running`` record is replaced
        within the step: the index learns of it from the folder."""
        running = self.record.status == "running"
        # The index learns of a finished record after the step goes on (the file is written).
        saved = self.store.save(self.record, index=not running, index_later=True)
        path = str(saved)
        if not running and is_local(saved):  # a read of its output in this process takes these
            remember_saved(path, saved.path, self.record)
        if not running and not self.lineage_sent:
            self.lineage_sent = True
            send_finished_record(self.record, path, self.schemas)
        return path

    def saved(self) -> bool:
        """True when a record of this identity is in the store already."""
        try:
            return self.store.path_for(self.identity.task_path, self.identity.run_id).exists()
        except OSError:  # an unreachable store: saving will say so
            return False

    def remove(self) -> None:
        """Delete the saved record (an output never emitted leaves no trace)."""
        path = self.store.path_for(self.identity.task_path, self.identity.run_id)
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)


@lru_cache(maxsize=1)
def engine_version() -> str:
    """``ubunye-dagster <version>``, the record's ``engine_version``."""
    try:
        from importlib.metadata import version

        return f"{ENGINE_NAME} {version(ENGINE_NAME)}"
    except Exception:  # running from a source tree that is not installed
        return f"{ENGINE_NAME} {__version__}"


@lru_cache(maxsize=1)
def environment_evidence() -> tuple[str, str]:
    """This process's environment (as JSON text, so the cache cannot be mutated) and its hash."""
    env = environment()
    return json.dumps(env, sort_keys=True), environment_hash(env)


@lru_cache(maxsize=256)
def code_hash_for_run(dagster_run_id: str, folder: str) -> str | None:
    """``code_hash`` of ``folder``, computed once per run in this process (the code of one run
    does not change under it; the next run hashes again)."""
    return code_hash(folder)


def utc_text(epoch_seconds: float) -> str:
    """An instant as ISO-8601 UTC text, the record's time format."""
    return datetime.fromtimestamp(epoch_seconds, tz=timezone.utc).isoformat()


def config_hash_of(op_config: Any) -> str:
    """``sha256:`` of the asset's run config as canonical JSON (``null`` when it has none)."""
    text = json.dumps(op_config, sort_keys=True, separators=(",", ":"), default=str)
    return prefixed_sha256(text)


def run_variables(subject: Subject) -> dict[str, Any]:
    """The record's ``variables``: what the run was given (partition, window, tags masked)."""
    variables: dict[str, Any] = {
        "dagster_run_id": subject.dagster_run_id,
        "step_key": subject.step_key,
    }
    if subject.job_name:
        variables["job_name"] = subject.job_name
    if subject.asset_key is not None:
        variables["asset_key"] = subject.asset_key
    if subject.partition_key is not None:
        variables["partition_key"] = str(subject.partition_key)
    if subject.partition_dimensions:
        variables["partition_dimensions"] = dict(subject.partition_dimensions)
    if subject.time_window is not None:
        start, end = subject.time_window
        variables["time_window"] = {"start": start.isoformat(), "end": end.isoformat()}
    variables["tags"] = mask_tags(subject.tags)
    return variables


def running_record(subject: Subject, place: RecordPlace, started_epoch: float) -> OpenRecord:
    """A record with status ``running`` for ``subject``: identity, evidence and run variables."""
    identity = subject.identity(place.usecase)
    folder = subject.code_folder(place)
    env_text, env_hash = environment_evidence()
    record = RunRecord(
        run_id=identity.run_id,
        task_path=identity.task_path,
        usecase=identity.usecase,
        package=identity.package,
        task_name=identity.task,
        profile="dagster",
        model=subject.model,
        version=subject.code_version or "",
        config_hash=config_hash_of(subject.op_config),
        started_at=utc_text(started_epoch),
        status="running",
        engine_version=engine_version(),
        backend="",
        variables=run_variables(subject),
        code_hash=None if folder is None else code_hash_for_run(subject.dagster_run_id, folder),
        environment=json.loads(env_text),
        environment_hash=env_hash,
        time_zone="UTC",
    )
    return OpenRecord(
        identity=identity, store=place.store(), record=record, asset_key=subject.asset_key
    )


def fill_record(
    record: RunRecord,
    *,
    inputs: Sequence[StepRecord],
    outputs: Sequence[StepRecord] = (),
    timings: Sequence[Mapping[str, Any]] = (),
    expectations: Sequence[Mapping[str, Any]] = (),
) -> None:
    """Set the record's inputs, outputs, timings and expectation results (copies)."""
    record.inputs = list(inputs)
    record.outputs = list(outputs)
    record.timings = [dict(t) for t in timings]
    record.expectations = [dict(e) for e in expectations]


def close_record(
    record: RunRecord,
    status: str,
    error: BaseException | str | None = None,
    *,
    ended_epoch: float | None = None,
) -> None:
    """Close ``record``: status, end time (now unless given), duration and the masked error."""
    ended = time.time() if ended_epoch is None else ended_epoch
    record.status = status
    record.ended_at = utc_text(ended)
    started = required_instant(record.started_at).timestamp()
    record.duration_sec = round(max(0.0, ended - started), 6)
    if isinstance(error, BaseException):
        record.error = mask_error(error)
    elif error is not None:
        record.error = error
