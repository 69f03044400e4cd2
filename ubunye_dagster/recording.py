"""One step's run records, assembled from what the step loaded and wrote.

Dagster calls the IO manager once per input and once per output, and never after the asset's
function fails, so the step's evidence is gathered in a *step session* (one per Dagster run and
step, in this process) that the IO manager and ``UbunyeResource`` share:

- each input loaded is hashed and added, with its read timing;
- the first load saves each of the step's assets a record with status ``running`` (so even a
  killed process leaves a trace);
- each output written completes its asset's record (``success``, or ``error`` when the write
  or an expectation failed);
- when the run's resources are torn down (Dagster does this whether or not the step failed),
  records still open are finished: ``error`` with the step's exception text, masked, when the
  step failed; otherwise the asset was stored by another IO manager (``success`` with the inputs)
  or not emitted at all (the ``running`` record is removed).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

from ubunye_core.evidence import code_hash, environment, environment_hash
from ubunye_core.hashing.digest import prefixed_sha256
from ubunye_core.record import RunRecord, StepRecord
from ubunye_core.store import LineageStore
from ubunye_dagster.identity import RecordIdentity
from ubunye_dagster.masking import mask_error, mask_tags, mask_text

ENGINE_NAME = "ubunye-dagster"


@lru_cache(maxsize=1)
def engine_version() -> str:
    """``ubunye-dagster <version>``, the record's ``engine_version``."""
    try:
        from importlib.metadata import version

        return f"{ENGINE_NAME} {version(ENGINE_NAME)}"
    except Exception:  # running from a source tree that is not installed
        from ubunye_core import __version__

        return f"{ENGINE_NAME} {__version__}"


@lru_cache(maxsize=1)
def environment_evidence() -> tuple[str, str]:
    """This process's environment (as JSON text, so the cache cannot be mutated) and its hash."""
    env = environment()
    return json.dumps(env, sort_keys=True), environment_hash(env)


def utc_text(epoch_seconds: float) -> str:
    """An instant as ISO-8601 UTC text, the record's time format."""
    return datetime.fromtimestamp(epoch_seconds, tz=timezone.utc).isoformat()


def config_hash_of(op_config: Any) -> str:
    """``sha256:`` of the asset's run config as canonical JSON (``null`` when it has none)."""
    text = json.dumps(op_config, sort_keys=True, separators=(",", ":"), default=str)
    return prefixed_sha256(text)


def compute_fn_folder(op_def: Any) -> str | None:
    """The folder of the module that defines an op's (asset's) function, or None if unknown."""
    try:
        fn = op_def.compute_fn
        fn = getattr(fn, "decorated_fn", fn)
        source = inspect.getsourcefile(inspect.unwrap(fn))
    except (AttributeError, TypeError):
        return None
    return str(Path(source).resolve().parent) if source else None


def code_folder_for(op_def: Any, asset_setting: Any, resource_setting: str | None) -> str | None:
    """The code that is hashed: the asset's metadata setting, else the resource's, else the
    folder of the asset function's module."""
    chosen = getattr(asset_setting, "value", asset_setting) or resource_setting
    return str(chosen) if chosen else compute_fn_folder(op_def)


def run_variables(
    *,
    dagster_run_id: str,
    step_key: str,
    asset_key: str | None,
    partition_key: str | None,
    partition_dimensions: Mapping[str, str] | None,
    time_window: tuple[Any, Any] | None,
    tags: Mapping[str, str],
    job_name: str | None,
) -> dict[str, Any]:
    """The record's ``variables``: what the run was given (partition, window, tags masked)."""
    variables: dict[str, Any] = {"dagster_run_id": dagster_run_id, "step_key": step_key}
    if job_name:
        variables["job_name"] = job_name
    if asset_key is not None:
        variables["asset_key"] = asset_key
    if partition_key is not None:
        variables["partition_key"] = str(partition_key)
    if partition_dimensions:
        variables["partition_dimensions"] = dict(partition_dimensions)
    if time_window is not None:
        start, end = time_window
        variables["time_window"] = {"start": start.isoformat(), "end": end.isoformat()}
    variables["tags"] = mask_tags(tags)
    return variables


@dataclass
class OpenRecord:
    """An asset's record while its step runs, and where it is saved."""

    identity: RecordIdentity
    store: LineageStore
    record: RunRecord
    #: The Dagster output that materialises the asset (None for a record made by the resource).
    output_name: str | None = None
    #: The asset key as ``a/b``, to pick the inputs that belong to this asset.
    asset_key: str | None = None
    #: Set once the record has its final status from the IO manager.
    finished: bool = False

    def save(self) -> str:
        """Write the record (atomically) and return its path."""
        return str(self.store.save(self.record))


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
    step_context: Any = None
    inputs: list[LoadedInput] = field(default_factory=list)
    timings: list[dict[str, Any]] = field(default_factory=list)
    last_read_epoch: float | None = None
    transform_seconds: float | None = None
    records: dict[tuple[str, str], OpenRecord] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)

    @property
    def started_at(self) -> str:
        return utc_text(self.started_epoch)

    def add_input(self, loaded: LoadedInput, read_seconds: float, reader: str) -> None:
        """Record one loaded input and its read timing."""
        with self.lock:
            # A retried step loads its inputs again: the latest read replaces the earlier one.
            name = loaded.step.name
            self.inputs = [known for known in self.inputs if known.step.name != name]
            self.timings = [t for t in self.timings if t.get("input") != name]
            self.inputs.append(loaded)
            self.timings.append(
                {"step": f"Reader:{reader}", "input": loaded.step.name, "seconds": read_seconds}
            )
            self.last_read_epoch = time.time()

    def loaded_input_names(self) -> set[str]:
        """The Dagster input names this step loaded through an Ubunye IO manager."""
        return {loaded.input_name for loaded in self.inputs}

    def transform_timing(self, op_name: str) -> dict[str, Any]:
        """The transform's timing: from the last input read (or the step start) to the first
        output handed over; measured once per step."""
        with self.lock:
            if self.transform_seconds is None:
                since = self.last_read_epoch or self.started_epoch
                self.transform_seconds = max(0.0, time.time() - since)
            return {"step": f"Transform:{op_name}", "seconds": round(self.transform_seconds, 6)}

    def code_hash_of(self, folder: str | None) -> str | None:
        """``code_hash`` of ``folder``, computed once per run in this process."""
        return None if folder is None else _run_code_hash(self.dagster_run_id, folder)

    def record_for(self, identity: RecordIdentity) -> OpenRecord | None:
        """The open record of ``identity``, if this step has one."""
        return self.records.get((identity.task_path, identity.run_id))

    def keep(self, open_record: OpenRecord) -> OpenRecord:
        """Remember ``open_record`` as this step's record of its identity."""
        key = (open_record.identity.task_path, open_record.identity.run_id)
        self.records[key] = open_record
        return open_record


@lru_cache(maxsize=256)
def _run_code_hash(dagster_run_id: str, folder: str) -> str | None:
    # Keyed by run: the code of one run does not change under it, the next run hashes again.
    return code_hash(folder)


_SESSIONS: dict[tuple[str, str], StepSession] = {}
_SESSIONS_LOCK = threading.Lock()


def step_started_epoch(instance: Any, dagster_run_id: str, step_key: str) -> float:
    """When Dagster started the step (its step stats), or now when that is not known."""
    try:
        stats = instance.get_run_step_stats(dagster_run_id, step_keys=[step_key])
        started = stats[0].start_time if stats else None
    except Exception:  # an instance without event storage (a context built in a test)
        started = None
    return float(started) if started else time.time()


def open_session(dagster_run_id: str, step_key: str, step_context: Any = None) -> StepSession:
    """The session of one step of one run, opened on first use."""
    key = (dagster_run_id, step_key)
    with _SESSIONS_LOCK:
        session = _SESSIONS.get(key)
        if session is None:
            instance = getattr(step_context, "instance", None)
            session = StepSession(
                dagster_run_id=dagster_run_id,
                step_key=step_key,
                started_epoch=step_started_epoch(instance, dagster_run_id, step_key),
                step_context=step_context,
            )
            _SESSIONS[key] = session
        elif session.step_context is None and step_context is not None:
            session.step_context = step_context
        return session


def sessions_of_run(dagster_run_id: str) -> list[StepSession]:
    """The open step sessions of one Dagster run in this process."""
    with _SESSIONS_LOCK:
        return [s for (run_id, _), s in _SESSIONS.items() if run_id == dagster_run_id]


def new_record(
    identity: RecordIdentity,
    session: StepSession,
    *,
    code_hash_value: str | None,
    config_hash: str,
    variables: Mapping[str, Any],
    backend: str = "",
    model: str = "asset",
    version: str | None = None,
) -> RunRecord:
    """A record with status ``running``: identity, evidence and what the step knows so far.

    ``model`` says what made the rows (``asset`` or ``op``); ``version`` is its code version.
    """
    env_text, env_hash = environment_evidence()
    return RunRecord(
        run_id=identity.run_id,
        task_path=identity.task_path,
        usecase=identity.usecase,
        package=identity.package,
        task_name=identity.task,
        profile="dagster",
        model=model,
        version=version or "",
        config_hash=config_hash,
        started_at=session.started_at,
        status="running",
        engine_version=engine_version(),
        backend=backend,
        variables=dict(variables),
        code_hash=code_hash_value,
        environment=json.loads(env_text),
        environment_hash=env_hash,
        time_zone="UTC",
    )


def fill_steps(
    record: RunRecord,
    session: StepSession,
    *,
    input_names: Sequence[str] | None,
    unseen: Sequence[LoadedInput] = (),
    outputs: Sequence[StepRecord] = (),
    extra_timings: Sequence[Mapping[str, Any]] = (),
    expectations: Sequence[Mapping[str, Any]] = (),
) -> dict[str, str | None]:
    """Put the step's inputs (those of ``input_names``; all when None), outputs and timings in
    ``record``; returns each recorded input's asset key (``a/b``) by record input name."""
    chosen = [
        loaded
        for loaded in session.inputs
        if input_names is None or loaded.input_name in input_names
    ]
    record.inputs = [loaded.step for loaded in [*chosen, *unseen]]
    record.outputs = list(outputs)
    kept = {loaded.step.name for loaded in chosen}
    record.timings = [
        dict(t) for t in session.timings if t.get("input") is None or t.get("input") in kept
    ] + [dict(t) for t in extra_timings]
    record.expectations = [dict(e) for e in expectations]
    return {loaded.step.name: loaded.asset_key for loaded in [*chosen, *unseen]}


def finish(
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
    started = datetime.fromisoformat(record.started_at).timestamp()
    record.duration_sec = round(max(0.0, ended - started), 6)
    if isinstance(error, BaseException):
        record.error = mask_error(error)
    elif error is not None:
        record.error = error


def step_failure(session: StepSession) -> BaseException | None:
    """The exception the step failed with, as Dagster captured it, or None."""
    step_context = session.step_context
    return getattr(step_context, "step_exception", None) if step_context is not None else None


def finalise_run(dagster_run_id: str) -> list[str]:
    """Finish the records still open for one run's steps in this process; returns their paths.

    A failed step's records become ``error`` with the step's exception (masked). A record whose
    asset the IO manager did not write ends ``success`` (with its inputs) when Dagster saw the
    output, and is removed when the output was never emitted. Safe to call more than once.
    """
    saved: list[str] = []
    for session in sessions_of_run(dagster_run_id):
        with session.lock:
            failure = step_failure(session)
            for open_record in session.records.values():
                if open_record.finished:
                    continue
                if failure is not None:
                    finish(open_record.record, "error", failure)
                    saved.append(open_record.save())
                elif open_record.record.status != "running":
                    pass  # finished by the resource (an output it recorded): already saved
                elif _output_seen(session, open_record.output_name):
                    finish(open_record.record, "success")
                    saved.append(open_record.save())
                else:
                    _remove(open_record)
                open_record.finished = True
        with _SESSIONS_LOCK:
            _SESSIONS.pop((session.dagster_run_id, session.step_key), None)
    return saved


def _output_seen(session: StepSession, output_name: str | None) -> bool:
    if output_name is None or session.step_context is None:
        return False
    try:
        return bool(session.step_context.has_seen_output(output_name))
    except Exception:  # a Dagster without this check: keep the record rather than lose it
        return True


def _remove(open_record: OpenRecord) -> None:
    path = open_record.store.path_for(open_record.identity.task_path, open_record.identity.run_id)
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)


# --- what the step context says about the step (Dagster internals, read in one place) --------


def _asset_layer(step_context: Any) -> Any:
    return step_context.job_def.asset_layer


def _asset_node(step_context: Any, asset_key: Any) -> Any:
    """The asset's node in the step's job, or None when the job does not know the asset."""
    try:
        return _asset_layer(step_context).get(asset_key)
    except Exception:  # an asset outside the job's asset graph
        return None


def group_of(step_context: Any, asset_key: Any) -> str | None:
    """The group of an asset in the step's job, or None when the job does not know it."""
    node = _asset_node(step_context, asset_key)
    return None if node is None else node.group_name


def code_version_of(step_context: Any, asset_key: Any) -> str | None:
    """The ``code_version`` the asset was defined with, or None when it has none."""
    node = _asset_node(step_context, asset_key)
    return None if node is None else node.code_version


def asset_definition_metadata(step_context: Any, asset_key: Any) -> dict[str, Any]:
    """The metadata an asset was defined with."""
    node = _asset_node(step_context, asset_key)
    return {} if node is None else dict(node.metadata or {})


def parent_keys_of(step_context: Any, asset_key: Any) -> set[str] | None:
    """The asset's upstream keys as ``a/b`` text, or None when the job does not say."""
    node = _asset_node(step_context, asset_key)
    if node is None:
        return None
    return {"/".join(key.path) for key in node.parent_keys}


def input_names_for(session: StepSession, asset_key: Any) -> list[str] | None:
    """The step's loaded inputs that feed ``asset_key`` (a multi-asset's outputs each have their
    own); None means all of them."""
    if session.step_context is None:
        return None
    parents = parent_keys_of(session.step_context, asset_key)
    if parents is None:
        return None
    return [
        loaded.input_name
        for loaded in session.inputs
        if loaded.asset_key is None or loaded.asset_key in parents
    ]


def unseen_inputs(session: StepSession, asset_key: Any) -> list[LoadedInput]:
    """Inputs of the asset that another IO manager loaded: recorded without a hash, saying why."""
    step_context = session.step_context
    if step_context is None:
        return []
    try:
        input_defs = list(step_context.op_def.input_defs)
        layer = _asset_layer(step_context)
        node_handle = step_context.node_handle
    except Exception:  # a step without an op definition
        return []
    parents = parent_keys_of(step_context, asset_key)
    loaded = session.loaded_input_names()
    unseen = []
    for input_def in input_defs:
        if input_def.name in loaded or input_def.dagster_type.is_nothing:
            continue
        upstream = layer.get_asset_key_for_node_input(node_handle, input_def.name)
        upstream_text = "/".join(upstream.path) if upstream is not None else None
        if parents is not None and upstream_text is not None and upstream_text not in parents:
            continue  # an input of another asset of the same multi-asset
        manager = input_def.input_manager_key
        if manager is None and upstream is not None and layer.has(upstream):
            manager = layer.get(upstream).io_manager_key
        step = StepRecord(
            name=input_def.name,
            direction="input",
            hash_error=(
                f"not hashed: loaded by the IO manager '{manager or 'io_manager'}', which is not "
                "an UbunyeIOManager, so its rows were never seen"
            ),
        )
        unseen.append(LoadedInput(step=step, asset_key=upstream_text, input_name=input_def.name))
    return unseen


def output_partition(step_context: Any, output_name: str) -> str | None:
    """The one partition an output writes, None when unpartitioned (ValueError for a range)."""
    if not step_context.has_asset_partitions_for_output(output_name):
        return None
    start, end = step_context.asset_partition_key_range_for_output(output_name)
    if start != end:
        raise ValueError(
            f"output '{output_name}' covers the partitions {start} to {end} in one run; "
            "UbunyeIOManager writes one partition per run (launch the backfill with a "
            "multi-run policy)"
        )
    return start


def _time_window(step_context: Any, output_name: str | None) -> tuple[Any, Any] | None:
    try:
        if output_name is not None:
            window = step_context.asset_partitions_time_window_for_output(output_name)
        else:
            window = step_context.partition_time_window
    except Exception:  # not partitioned by time
        return None
    return (window.start, window.end)


def _dimensions(partition_key: str | None) -> dict[str, str] | None:
    by_dimension = getattr(partition_key, "keys_by_dimension", None)
    return dict(by_dimension) if by_dimension else None


def asset_record(
    session: StepSession,
    settings: Any,
    *,
    asset_key: Any,
    output_name: str | None,
    partition_key: str | None,
) -> OpenRecord:
    """The record of one asset (partition) of this step, opened (status ``running``) on first use.

    ``settings`` is the ``UbunyeResource``: usecase, code folder and store.
    """
    from ubunye_dagster.identity import identity_for_asset
    from ubunye_dagster.metadata import CODE_FOLDER

    step_context = session.step_context
    identity = identity_for_asset(
        usecase=settings.usecase,
        asset_key=asset_key.path,
        group_name=group_of(step_context, asset_key),
        dagster_run_id=session.dagster_run_id,
        partition_key=partition_key,
    )
    existing = session.record_for(identity)
    if existing is not None:
        if output_name is not None:
            existing.output_name = output_name
        return existing
    definition = asset_definition_metadata(step_context, asset_key)
    folder = code_folder_for(step_context.op_def, definition.get(CODE_FOLDER), settings.code_folder)
    variables = run_variables(
        dagster_run_id=session.dagster_run_id,
        step_key=session.step_key,
        asset_key="/".join(asset_key.path),
        partition_key=partition_key,
        partition_dimensions=_dimensions(partition_key),
        time_window=_time_window(step_context, output_name) if partition_key else None,
        tags=dict(step_context.dagster_run.tags),
        job_name=step_context.job_name,
    )
    record = new_record(
        identity,
        session,
        code_hash_value=session.code_hash_of(folder),
        config_hash=config_hash_of(step_context.op_config),
        variables=variables,
        version=code_version_of(step_context, asset_key),
    )
    return session.keep(
        OpenRecord(
            identity=identity,
            store=settings.store(),
            record=record,
            output_name=output_name,
            asset_key="/".join(asset_key.path),
        )
    )


def step_asset_outputs(step_context: Any) -> list[tuple[str, Any]]:
    """``(output name, asset key)`` of each asset the step materialises (its selected outputs)."""
    layer = _asset_layer(step_context)
    selected = step_context.get_output_asset_keys()
    found = []
    for step_output in step_context.step.step_outputs:
        key = layer.get_asset_key_for_node_output(step_context.node_handle, step_output.name)
        if key is not None and key in selected:
            found.append((step_output.name, key))
    return found


def open_running_records(session: StepSession, settings: Any) -> None:
    """Save a ``running`` record for each asset of the step not yet recorded, with the inputs so
    far, so a step that dies before writing leaves a trace."""
    step_context = session.step_context
    if step_context is None:
        return
    for output_name, asset_key in step_asset_outputs(step_context):
        try:
            partition_key = output_partition(step_context, output_name)
        except ValueError:
            continue  # several partitions: refused when the output is written
        open_record = asset_record(
            session,
            settings,
            asset_key=asset_key,
            output_name=output_name,
            partition_key=partition_key,
        )
        if open_record.finished or open_record.record.status != "running":
            continue
        fill_steps(
            open_record.record,
            session,
            input_names=input_names_for(session, asset_key),
        )
        open_record.save()


# --- a step that failed before it loaded or wrote anything ---------------------------------------


def executing_job_and_plan() -> tuple[Any, Any] | None:
    """The job definition and execution plan of the Dagster execution this is called within, or
    None outside one.

    Dagster hands resource teardown neither, yet teardown is where a step that failed without
    touching the IO manager can still be recorded; both are locals of the frame that runs the
    execution (``execution_context_event_generator``), in-process and in a step's own process.
    ``tests/test_io_manager_failures.py`` fails loudly if Dagster moves them.
    """
    from dagster._core.definitions.job_base import IJob
    from dagster._core.execution.plan.plan import ExecutionPlan

    frame = sys._getframe(1)
    while frame is not None:
        job, plan = frame.f_locals.get("job"), frame.f_locals.get("execution_plan")
        if isinstance(job, IJob) and isinstance(plan, ExecutionPlan):
            return job.get_definition(), plan
        frame = frame.f_back
    return None


def close_run_records(
    context: Any, settings: Any, claims: Callable[[Any, set[str], Any, Any], bool]
) -> None:
    """At a resource's teardown: record the failed steps no session saw, for the assets
    ``claims(job_def, resource keys, op_def, asset_node)`` says are the resource's, then finish
    the records still open (``finalise_run``)."""
    run = getattr(context, "run", None)
    if run is None:
        return
    executing = executing_job_and_plan()
    if executing is not None and context.instance is not None:
        job_def, plan = executing
        keys = resource_keys_of(job_def, context.resource_def)
        record_failures_without_session(
            context.instance,
            run,
            job_def,
            plan,
            settings,
            owns=lambda op_def, asset_node: claims(job_def, keys, op_def, asset_node),
        )
    finalise_run(run.run_id)


def _saved(store: LineageStore, identity: RecordIdentity) -> bool:
    try:
        return store.path_for(identity.task_path, identity.run_id).exists()
    except OSError:  # an unreachable store: saving will say so
        return False


def resource_keys_of(job_def: Any, resource_def: Any) -> set[str]:
    """The keys a job knows a resource definition by (the one being set up or torn down)."""
    return {key for key, known in job_def.resource_defs.items() if known is resource_def}


def stored_by_ubunye(job_def: Any, asset_node: Any) -> bool:
    """True when the asset's IO manager is an ``UbunyeIOManager`` (which records it itself)."""
    from ubunye_dagster.io_manager import UbunyeIOManager

    definition = job_def.resource_defs.get(asset_node.io_manager_key)
    cls = getattr(definition, "configurable_resource_cls", None)
    return isinstance(cls, type) and issubclass(cls, UbunyeIOManager)


def step_failures(instance: Any, dagster_run_id: str) -> dict[str, str]:
    """``{step key: "<Type>: <message>"}`` of the run's failed steps, from the event log; the
    user's own exception rather than Dagster's wrapper around it, credentials masked."""
    import dagster as dg

    failures: dict[str, str] = {}
    for entry in instance.all_logs(dagster_run_id, of_type=dg.DagsterEventType.STEP_FAILURE):
        data = entry.dagster_event.step_failure_data if entry.dagster_event else None
        error = getattr(data, "error", None)
        if entry.step_key is None or error is None:
            continue
        while error.cause is not None and error.cls_name.startswith("Dagster"):
            error = error.cause
        failures[entry.step_key] = mask_text(error.message.strip() or error.cls_name)
    return failures


def _step_times(instance: Any, dagster_run_id: str, step_key: str) -> tuple[float, float | None]:
    try:
        [stats] = instance.get_run_step_stats(dagster_run_id, step_keys=[step_key])
        started, ended = stats.start_time, stats.end_time
    except Exception:  # no step stats: the record says "now", never nothing
        started, ended = None, None
    return (float(started) if started else time.time()), (float(ended) if ended else None)


def _run_partition(dagster_run: Any) -> tuple[str | None, dict[str, str] | None]:
    """The one partition the run targets (its ``dagster/partition`` tag) and its dimensions."""
    tags = dict(dagster_run.tags)
    prefix = "dagster/partition/"
    dimensions = {
        name[len(prefix) :]: value for name, value in tags.items() if name.startswith(prefix)
    }
    return tags.get("dagster/partition"), dimensions or None


def _window_of(partitions_def: Any, partition_key: str | None) -> tuple[Any, Any] | None:
    """The time window of a time-partitioned asset's partition, else None."""
    if partitions_def is None or partition_key is None:
        return None
    try:
        window = partitions_def.time_window_for_partition_key(partition_key)
    except Exception:  # not partitioned by time
        return None
    return (window.start, window.end)


def record_failures_without_session(
    instance: Any,
    dagster_run: Any,
    job_def: Any,
    plan: Any,
    settings: Any,
    owns: Callable[[Any, Any], bool],
) -> list[str]:
    """Save an ``error`` record for each asset that ``owns(op_def, asset_node)`` claims whose
    step ran in this process and failed before its record was opened (it raised before loading
    or returning anything, or returned something that could not be stored): the error text
    (masked), any inputs loaded, the step's start, end and duration, and its transform timing.
    Returns the paths saved; records already open are left to ``finalise_run``."""
    from ubunye_dagster.identity import identity_for_asset
    from ubunye_dagster.metadata import CODE_FOLDER

    run_id = dagster_run.run_id
    sessions = {session.step_key: session for session in sessions_of_run(run_id)}
    executed = set(plan.step_keys_to_execute)
    layer = job_def.asset_layer
    partition_key, dimensions = _run_partition(dagster_run)
    run_config_ops = (dagster_run.run_config or {}).get("ops") or {}
    saved = []
    for step_key, error_text in step_failures(instance, run_id).items():
        if step_key not in executed:
            continue  # another process ran it, and records it
        step = plan.get_step_by_key(step_key)
        op_def = job_def.get_node(step.node_handle).definition
        started, ended = _step_times(instance, run_id, step_key)
        session = sessions.get(step_key) or StepSession(
            dagster_run_id=run_id, step_key=step_key, started_epoch=started
        )
        since = session.last_read_epoch or session.started_epoch
        transform = {
            "step": f"Transform:{op_def.name}",
            "seconds": round(max(0.0, (ended or time.time()) - since), 6),
        }
        op_config = (run_config_ops.get(op_def.name) or {}).get("config")
        for output in step.step_outputs:
            key = layer.get_asset_key_for_node_output(step.node_handle, output.name)
            if key is None or not layer.has(key):
                continue
            node = layer.get(key)
            if not owns(op_def, node):
                continue
            partitioned = node.partitions_def is not None
            if partitioned and partition_key is None:
                continue  # a range of partitions in one run: refused when written, nothing to keep
            asset_partition = partition_key if partitioned else None
            identity = identity_for_asset(
                usecase=settings.usecase,
                asset_key=key.path,
                group_name=node.group_name,
                dagster_run_id=run_id,
                partition_key=asset_partition,
            )
            store = settings.store()
            if session.record_for(identity) is not None or _saved(store, identity):
                continue  # recorded already in this run: finalise_run finishes what is open
            folder = code_folder_for(op_def, node.metadata.get(CODE_FOLDER), settings.code_folder)
            record = new_record(
                identity,
                session,
                code_hash_value=session.code_hash_of(folder),
                config_hash=config_hash_of(op_config),
                variables=run_variables(
                    dagster_run_id=run_id,
                    step_key=step_key,
                    asset_key="/".join(key.path),
                    partition_key=asset_partition,
                    partition_dimensions=dimensions if partitioned else None,
                    time_window=_window_of(node.partitions_def, asset_partition),
                    tags=dict(dagster_run.tags),
                    job_name=dagster_run.job_name,
                ),
                version=node.code_version,
            )
            fill_steps(
                record,
                session,
                input_names=input_names_for(session, key),
                extra_timings=[transform],
            )
            finish(record, "error", error_text, ended_epoch=ended)
            saved.append(str(store.save(record)))
    return saved
