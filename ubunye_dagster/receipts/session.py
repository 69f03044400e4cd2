"""The step session: what one Dagster step has loaded, timed and recorded so far, in this process.

Dagster calls the IO manager once per input and once per output, and never after the asset's
function fails, so the IO manager and ``UbunyeResource`` share one session per run and step:

- each input loaded is added with its read timing;
- the first load saves each of the step's assets a ``running`` record (so even a killed process
  leaves a trace);
- each output written closes its asset's record (``success``, or ``error`` when the write or an
  expectation failed);
- when the run's resources are torn down (Dagster does this whether or not the step failed),
  :func:`close_run` closes the records still open: ``error`` with the step's exception, masked,
  when the step failed; otherwise the asset was stored by another IO manager (``success`` with
  its inputs) or not emitted at all (the ``running`` record is removed).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from ubunye_core.records import drift
from ubunye_core.records.model import StepRecord
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.dagster_internals import StepExecutionContext
from ubunye_dagster.receipts import subjects
from ubunye_dagster.receipts.metadata import DETERMINISTIC, declared_true
from ubunye_dagster.receipts.records import (
    OpenRecord,
    RecordPlace,
    Subject,
    close_record,
    fill_record,
    running_record,
)
from ubunye_dagster.receipts.step_starts import step_started_at


@dataclass
class LoadedInput:
    """One input as recorded: its step, the asset it came from, and the Dagster input name."""

    step: StepRecord
    asset_key: str | None
    input_name: str


@dataclass
class StepSession:
    """Everything one Dagster step has loaded, timed and recorded so far, in this process."""

    dagster_run_id: str
    step_key: str
    started_epoch: float
    step_context: StepExecutionContext | None = None
    inputs: list[LoadedInput] = field(default_factory=list)
    timings: list[dict[str, Any]] = field(default_factory=list)
    last_read_epoch: float | None = None
    transform_seconds: float | None = None
    records: dict[tuple[str, str], OpenRecord] = field(default_factory=dict)
    #: The subject of each asset (partition) the step records, by asset key and partition key.
    subjects: dict[tuple[dg.AssetKey, str | None], Subject] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)
    #: Whether the write pipeline's judge was told of the step (it asks ahead once a step).
    judge_told: bool = False

    def add_input(self, loaded: LoadedInput, read_seconds: float, reader: str) -> None:
        """Record one loaded input and its read timing."""
        with self.lock:
            # A retried step loads its inputs again: the latest read replaces the earlier one.
            name = loaded.step.name
            self.inputs = [known for known in self.inputs if known.step.name != name]
            self.timings = [t for t in self.timings if t.get("input") != name]
            self.inputs.append(loaded)
            self.timings.append(
                {"step": f"Reader:{reader}", "input": name, "seconds": read_seconds}
            )
            self.last_read_epoch = time.time()

    def transform_timing(self, op_name: str, until: float | None = None) -> dict[str, Any]:
        """The transform's timing: from the last input read (or the step start) to the first
        output handed over (or ``until``); measured once per step."""
        with self.lock:
            if self.transform_seconds is None:
                since = self.last_read_epoch or self.started_epoch
                ended = time.time() if until is None else until
                self.transform_seconds = max(0.0, ended - since)
            return {"step": f"Transform:{op_name}", "seconds": round(self.transform_seconds, 6)}

    def record(self, subject: Subject, place: RecordPlace, output_name: str | None) -> OpenRecord:
        """The record of ``subject`` in this step, opened (status ``running``) on first use."""
        identity = subject.identity(place.usecase)
        key = (identity.task_path, identity.run_id)
        existing = self.records.get(key)
        if existing is not None:
            existing.output_name = output_name or existing.output_name
            return existing
        opened = running_record(subject, place, self.started_epoch)
        opened.output_name = output_name
        self.records[key] = opened
        return opened

    def has_record(self, subject: Subject, place: RecordPlace) -> bool:
        """True when this step holds a record of ``subject``."""
        identity = subject.identity(place.usecase)
        return (identity.task_path, identity.run_id) in self.records

    def inputs_of(self, asset_key: dg.AssetKey | None) -> list[LoadedInput]:
        """The step's inputs that feed ``asset_key``: those it loaded (a multi-asset's outputs each
        have their own), then those loaded by another IO manager, recorded without a hash."""
        if asset_key is None or self.step_context is None:
            return list(self.inputs)
        parents = internals.parent_keys(self.step_context, asset_key)
        own = [
            loaded
            for loaded in self.inputs
            if parents is None or loaded.asset_key is None or loaded.asset_key in parents
        ]
        loaded_names = {loaded.input_name for loaded in self.inputs}
        foreign = internals.inputs_of_other_io_managers(self.step_context, asset_key, loaded_names)
        return own + [_unhashed_input(found) for found in foreign]

    def fill(
        self,
        open_record: OpenRecord,
        inputs: Sequence[LoadedInput],
        *,
        outputs: Sequence[StepRecord] = (),
        extra_timings: Sequence[dict[str, Any]] = (),
        expectations: Sequence[dict[str, Any]] = (),
    ) -> dict[str, str | None]:
        """Put ``inputs`` (with their read timings), outputs, timings and expectation results in
        the record; returns each input's asset key (``a/b``) by record input name."""
        names = {loaded.step.name for loaded in inputs}
        reads = [t for t in self.timings if t.get("input") is None or t.get("input") in names]
        fill_record(
            open_record.record,
            inputs=[loaded.step for loaded in inputs],
            outputs=outputs,
            timings=[*reads, *extra_timings],
            expectations=expectations,
        )
        keys = {loaded.step.name: loaded.asset_key for loaded in inputs}
        self._note_upstreams(open_record, keys)
        return keys

    def _note_upstreams(self, open_record: OpenRecord, keys: dict[str, str | None]) -> None:
        """What the drift verdict reads from a record (``ubunye_core.records.drift``): each input's
        asset, each upstream's Dagster data version, and whether the asset says it is
        deterministic."""
        variables = open_record.record.variables
        variables[drift.INPUT_ASSET_KEYS_VARIABLE] = {n: k for n, k in keys.items() if k}
        if self.step_context is None or open_record.asset_key is None:
            return
        asset_key = dg.AssetKey.from_user_string(open_record.asset_key)
        versions = internals.upstream_data_versions(self.step_context, asset_key)
        if versions is not None:
            variables[drift.UPSTREAM_VERSIONS_VARIABLE] = versions
        facts = internals.asset_facts(self.step_context, asset_key)
        if declared_true(facts.metadata, DETERMINISTIC):
            variables[drift.DETERMINISTIC_VARIABLE] = True


def _unhashed_input(found: internals.ForeignInput) -> LoadedInput:
    step = StepRecord(
        name=found.input_name,
        direction="input",
        hash_error=(
            f"not hashed: loaded by the IO manager '{found.io_manager_key}', which is not an "
            "UbunyeIOManager, so its rows were never seen"
        ),
    )
    return LoadedInput(step=step, asset_key=found.asset_key, input_name=found.input_name)


_SESSIONS: dict[tuple[str, str], StepSession] = {}
_SESSIONS_LOCK = threading.Lock()


def open_session(step_context: StepExecutionContext) -> StepSession:
    """The session of the step ``step_context`` runs, opened on first use."""
    key = internals.run_and_step_of(step_context)
    with _SESSIONS_LOCK:
        session = _SESSIONS.get(key)
        if session is None:
            started = step_started_at(internals.instance_of(step_context), *key)
            session = StepSession(*key, started_epoch=started or time.time())
            _SESSIONS[key] = session
        if session.step_context is None:
            session.step_context = step_context
        return session


def session_of(dagster_run_id: str, step_key: str) -> StepSession | None:
    """The open session of one step of one run in this process, if there is one."""
    with _SESSIONS_LOCK:
        return _SESSIONS.get((dagster_run_id, step_key))


def sessions_of_run(dagster_run_id: str) -> list[StepSession]:
    """The open step sessions of one Dagster run in this process."""
    with _SESSIONS_LOCK:
        return [s for (run_id, _), s in _SESSIONS.items() if run_id == dagster_run_id]


def asset_record(
    session: StepSession,
    place: RecordPlace,
    asset_key: dg.AssetKey,
    *,
    output_name: str | None,
    partition_key: str | None,
) -> OpenRecord:
    """The record of one asset (partition) of the session's step, opened on first use."""
    subject = session.subjects.get((asset_key, partition_key))
    if subject is None:  # read from the step once: its run, config and definitions stay put
        subject = subjects.step_asset_subject(session.step_context, asset_key, partition_key)
        session.subjects[(asset_key, partition_key)] = subject
    return session.record(subject, place, output_name)


def save_running_records(session: StepSession, place: RecordPlace) -> None:
    """Save a ``running`` record for each asset of the step not yet closed, with the inputs so
    far, so a step that dies before writing leaves a trace."""
    step_context = session.step_context
    if step_context is None:
        return
    with session.lock:
        for output_name, asset_key, partition_key in internals.one_partition_outputs(step_context):
            open_record = asset_record(
                session, place, asset_key, output_name=output_name, partition_key=partition_key
            )
            if open_record.closed or open_record.record.status != "running":
                continue
            session.fill(open_record, session.inputs_of(asset_key))
            open_record.save()


def close_run(dagster_run_id: str) -> list[str]:
    """Close the records still open for one run's steps in this process; returns their paths.

    A failed step's records become ``error`` with the step's exception (masked). A record whose
    asset the IO manager did not write ends ``success`` (with its inputs) when Dagster saw the
    output, and is removed when the output was never emitted. Safe to call more than once.
    """
    saved: list[str] = []
    for session in sessions_of_run(dagster_run_id):
        with session.lock:
            failure = internals.step_exception(session.step_context)
            for open_record in session.records.values():
                if open_record.closed:
                    continue
                open_record.closed = True
                if failure is not None:
                    close_record(open_record.record, "error", failure)
                elif open_record.record.status != "running":
                    continue  # closed by the resource (an output it recorded): already saved
                elif internals.has_seen_output(session.step_context, open_record.output_name):
                    close_record(open_record.record, "success")
                else:
                    open_record.remove()
                    continue
                saved.append(open_record.save())
        with _SESSIONS_LOCK:
            _SESSIONS.pop((session.dagster_run_id, session.step_key), None)
    return saved
