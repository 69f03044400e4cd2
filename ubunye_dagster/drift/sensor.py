"""The drift sensor: flags materialisations whose data changed while code and environment did not.

The sensor reads new asset materialisations from the Dagster event log (a cursor on storage ids,
so each is judged once across restarts), compares each receipt with the previous one of the same
asset and partition (`ubunye_core.records.drift`), tags the run that drifted, and reports the
`ubunye_reproducible` asset check evaluation. A tick that flags says so on the sensor's page, one
line per flagged materialisation (asset, run, why) in its skip reason and its logs, and hands
each verdict to the `on_drift` hook. `build_reproducibility_checks` declares the check so the
Dagster UI shows it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import dagster as dg
from pydantic import BaseModel, ConfigDict

from ubunye_core.diff.report import drift_rows
from ubunye_core.locations import StoreAccess
from ubunye_core.records import drift
from ubunye_core.records.model import RunRecord
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.checks.expectations import validate_declared_expectations
from ubunye_dagster.dagster_internals import (
    AssetCheckEvaluationTargetMaterializationData,
    UnresolvedAssetJobDefinition,
)
from ubunye_dagster.drift.hooks import (
    DEFAULT_HOOK_TIMEOUT_SECONDS,
    DriftHook,
    DriftVerdict,
    notify_drift,
    resolve_drift_hook,
)
from ubunye_dagster.drift.previous_materialisation import (
    Finding,
    evidence_from_metadata,
    finding_against,
    metadata_values,
    previous_record,
    read_run_record,
    receipt_from,
    receipt_of,
    tags_of,
)
from ubunye_dagster.drift.settings import DriftSettings
from ubunye_dagster.receipts import metadata as metadata_keys

#: Name of the asset check the sensor reports on every watched asset.
CHECK_NAME = "ubunye_reproducible"
#: Run tag set on a run that produced a flagged materialisation; the value is the drift reason.
DRIFT_TAG = "ubunye/drift"
#: Tags on an alert run request, naming what drifted.
ALERT_ASSET_TAG = "ubunye/drift_asset"
ALERT_RUN_TAG = "ubunye/drift_run_id"
ALERT_PARTITION_TAG = "ubunye/drift_partition"

#: Metadata of the check's spec: how it judges (flag reasons, strict sources, the lineage store,
#: a declared deterministic asset), read again where the asset's own step judges it.
CHECK_SETTINGS = "ubunye/check_settings"

#: The skip message of a tick that found no new materialisation.
NOTHING_NEW = "no new materialisations"
#: Flagged materialisations a tick's skip reason names one line each; its logs name them all.
MAX_FLAGS_IN_SKIP_REASON = 20

# How far a verdict's timestamp may trail its materialisation's across machines.
VERDICT_CLOCK_SKEW_SECONDS = 300.0


#: Severity of a failed check by drift reason: non-determinism is an error, the others a warning.
SEVERITY_BY_REASON: Mapping[str, dg.AssetCheckSeverity] = {
    drift.SAME_INPUTS: dg.AssetCheckSeverity.ERROR,
    drift.INPUTS_CHANGED: dg.AssetCheckSeverity.WARN,
    drift.INPUTS_UNKNOWN: dg.AssetCheckSeverity.WARN,
}

CoercibleToWatchedAsset = (
    dg.AssetKey | str | Sequence[str] | dg.AssetsDefinition | dg.AssetSpec | dg.SourceAsset
)


class DriftCursor(BaseModel):
    """The sensor's cursor: every materialisation up to this storage id has been judged."""

    model_config = ConfigDict(frozen=True)

    after_storage_id: int = -1

    @classmethod
    def parse(cls, text: str | None) -> DriftCursor:
        """Read a cursor written by `dump` (a bare storage id is accepted too)."""
        if not text:
            return cls()
        try:
            if text.strip().lstrip("-").isdigit():
                return cls(after_storage_id=int(text))
            return cls.model_validate_json(text)
        except ValueError as error:
            raise ValueError(
                f"unreadable drift sensor cursor {text!r}: expected "
                '{"after_storage_id": <int>}; reset the cursor in the UI to start over'
            ) from error

    def dump(self) -> str:
        return self.model_dump_json()


def watched_asset_keys(assets: Iterable[CoercibleToWatchedAsset]) -> list[dg.AssetKey]:
    """Asset keys from keys, "a/b" strings, key parts, asset definitions or specs (deduplicated)."""
    if isinstance(assets, (str, dg.AssetKey)):
        raise TypeError("assets must be a sequence of assets or keys, not a single key")
    keys: list[dg.AssetKey] = []
    for item in assets:
        if isinstance(item, dg.AssetKey):
            found = [item]
        elif isinstance(item, str):
            found = [dg.AssetKey.from_user_string(item)]
        elif isinstance(item, dg.AssetsDefinition):
            found = sorted(item.keys, key=lambda key: key.to_user_string())
        elif isinstance(item, (dg.AssetSpec, dg.SourceAsset)):
            found = [item.key]
        elif isinstance(item, Sequence) and all(isinstance(part, str) for part in item):
            found = [dg.AssetKey(list(item))]
        else:
            raise TypeError(
                f"cannot watch {item!r}: give AssetKey, 'a/b' text, key parts, an asset "
                "definition or an AssetSpec"
            )
        keys.extend(key for key in found if key not in keys)
    if not keys:
        raise ValueError("no assets to watch: pass None to watch every asset with Ubunye metadata")
    return keys


def declared_deterministic(assets: Iterable[Any]) -> frozenset[str]:
    """Keys ("a/b") of the asset definitions and specs whose metadata says
    `ubunye/deterministic: True`."""
    found = {
        key.to_user_string()
        for key, metadata in metadata_keys.definition_metadata(assets)
        if metadata_keys.declared_true(metadata, metadata_keys.DETERMINISTIC)
    }
    return frozenset(found)


def judge_pending_materialisations(
    instance: dg.DagsterInstance,
    cursor: DriftCursor,
    settings: DriftSettings,
    asset_keys: Sequence[dg.AssetKey] | None = None,
) -> tuple[list[Finding], DriftCursor]:
    """Judge the oldest materialisations after the cursor, at most one tick's worth.

    Returns the findings and the cursor moved over exactly what was looked at. Materialisations
    without Ubunye metadata are passed over (cursor moves, no finding) when watching all assets.
    """
    started = time.monotonic()
    pending = _pending_records(
        instance, asset_keys, cursor.after_storage_id, settings.max_events_per_tick
    )
    findings: list[Finding] = []
    latest: dict[tuple[dg.AssetKey, str | None], tuple[dg.EventLogRecord, drift.DriftEvidence]] = {}
    records_cache: dict[str, RunRecord | None] = {}
    last_looked_at = cursor.after_storage_id
    reported = _already_reported(instance, pending, cursor.after_storage_id)
    for index, record in enumerate(pending):
        if (
            index > 0
            and settings.tick_time_budget_seconds is not None
            and time.monotonic() - started > settings.tick_time_budget_seconds
        ):
            break
        last_looked_at = record.storage_id
        values = metadata_values(record)
        if record.storage_id in reported:
            # Judged by a tick whose verdicts were stored but not its cursor (the daemon ended
            # in between): remembered as the next one's predecessor, not judged or told again.
            receipt = receipt_from(values, tags_of(record), settings, records_cache, [])
            latest[(_asset_key(record), record.partition_key)] = (record, receipt)
            continue
        if asset_keys is None and not drift.carries_ubunye_metadata(values):
            # Remembered all the same: a later receipt's predecessor is this record, as it
            # would be if looked up in the event log.
            latest[(_asset_key(record), record.partition_key)] = (
                record,
                evidence_from_metadata(values, tags_of(record)),
            )
            continue
        findings.append(_judge_record(instance, record, values, settings, latest, records_cache))
    return findings, DriftCursor(after_storage_id=last_looked_at)


def check_evaluation_for(
    finding: Finding,
    flag_reasons: Iterable[str] = drift.DEFAULT_FLAG_REASONS,
    access: StoreAccess | None = None,
) -> dg.AssetCheckEvaluation:
    """The `ubunye_reproducible` evaluation that makes a finding visible on the asset (a
    flagged one's changed rows read from the store through ``access``)."""
    judgement = finding.judgement
    flag_reasons = tuple(flag_reasons)
    flagged = judgement.is_flagged(flag_reasons)
    return dg.AssetCheckEvaluation(
        asset_key=finding.asset_key,
        check_name=CHECK_NAME,
        passed=not flagged,
        severity=SEVERITY_BY_REASON[judgement.reason] if flagged else dg.AssetCheckSeverity.WARN,
        description=_describe(finding, flag_reasons),
        metadata=_evaluation_metadata(finding, flagged, tuple(flag_reasons), access),
        target_materialization_data=None
        if finding.storage_id is None
        else AssetCheckEvaluationTargetMaterializationData(
            storage_id=finding.storage_id, run_id=finding.run_id, timestamp=finding.timestamp
        ),
    )


def tag_drifted_runs(
    instance: dg.DagsterInstance, findings: Iterable[Finding], flag_reasons: Iterable[str]
) -> dict[str, str]:
    """Tag each run that produced a flagged materialisation with its strongest drift reason.

    A run already tagged keeps the stronger of its old and new reasons. Materialisations
    reported outside a run have no run to tag. Returns the tags written, by run id.
    """
    reasons_by_run: dict[str, set[str]] = {}
    flag_reasons = tuple(flag_reasons)
    for finding in findings:
        if finding.run_id and finding.judgement.is_flagged(flag_reasons):
            reasons_by_run.setdefault(finding.run_id, set()).add(finding.judgement.reason)
    written: dict[str, str] = {}
    for run_id, reasons in reasons_by_run.items():
        run = instance.get_run_by_id(run_id)
        if run is None:
            continue
        existing = run.tags.get(DRIFT_TAG)
        if existing in drift.DRIFT_REASONS:
            reasons.add(existing)
        reason = drift.strongest_reason(reasons)
        if reason != existing:
            instance.add_run_tags(run_id, {DRIFT_TAG: reason})
        written[run_id] = reason
    return written


def evaluate_drift_tick(
    context: dg.SensorEvaluationContext,
    settings: DriftSettings,
    asset_keys: list[dg.AssetKey] | None,
    *,
    alert: bool,
    on_drift: DriftHook | None = None,
    sensor_name: str = "ubunye_drift_sensor",
) -> dg.SensorResult:
    """One tick of the drift sensor: judge what is new, tag and report what drifted, name each
    flag on the tick, and hand each flagged verdict to `on_drift` once."""
    cursor = DriftCursor.parse(context.cursor)
    findings, moved_to = judge_pending_materialisations(
        context.instance, cursor, _with_definitions(settings, context), asset_keys
    )
    if moved_to == cursor:
        return dg.SensorResult(skip_reason=NOTHING_NEW, cursor=cursor.dump())
    tag_drifted_runs(context.instance, findings, settings.flag_reasons)
    flagged = [f for f in findings if f.judgement.is_flagged(settings.flag_reasons)]
    lines = [flag_line(f, settings.flag_reasons) for f in flagged]
    for line in lines:
        context.log.warning(line)
    run_requests = [_alert_request(f) for f in flagged] if alert else []
    result = dg.SensorResult(
        run_requests=run_requests,
        # Without run requests Dagster records the tick as skipped; say what it did.
        skip_reason=None if run_requests else _tick_summary(len(findings), lines),
        asset_events=[
            check_evaluation_for(f, settings.flag_reasons, settings.access) for f in findings
        ],
        cursor=moved_to.dump(),
    )
    # Last, once the tick is decided: a tick that raised would judge (and notify) again.
    if on_drift is not None and flagged:
        verdicts = [verdict_of(f, settings.flag_reasons, sensor_name) for f in flagged]
        notify_drift(on_drift, verdicts, context.log, settings.on_drift_timeout_seconds)
    return result


def flag_line(finding: Finding, flag_reasons: Iterable[str]) -> str:
    """The one line a tick shows for a flagged materialisation: which asset (and partition)
    drifted, in which run, and why."""
    judgement = finding.judgement
    asset = finding.asset_key.to_user_string()
    if finding.partition is not None:
        asset += f" (partition {finding.partition})"
    run = f"in run {finding.run_id}" if finding.run_id else "outside any run"
    line = f"{asset} drifted {run}: {judgement.outcome(tuple(flag_reasons))} since "
    line += _previous_run_text(finding)
    why = _why(judgement)
    return f"{line}; {why}." if why else f"{line}."


def verdict_of(finding: Finding, flag_reasons: Iterable[str], sensor_name: str) -> DriftVerdict:
    """What `on_drift` receives for a flagged finding."""
    flag_reasons = tuple(flag_reasons)
    judgement, current, previous = finding.judgement, finding.receipt, finding.previous_receipt
    return DriftVerdict(
        sensor=sensor_name,
        asset_key=finding.asset_key.to_user_string(),
        partition=finding.partition,
        run_id=finding.run_id or None,
        previous_run_id=finding.previous_run_id or None,
        verdict=judgement.verdict.value,
        reason=judgement.reason,
        outcome=judgement.outcome(flag_reasons),
        explanation=_why(judgement),
        severity=SEVERITY_BY_REASON[judgement.reason].value,
        summary=flag_line(finding, flag_reasons),
        moved_inputs=judgement.moved_inputs,
        unknown_inputs=judgement.unknown_inputs,
        data_hash=current.data_hash,
        previous_data_hash=previous.data_hash if previous else None,
        record_path=current.record_path,
        previous_record_path=previous.record_path if previous else None,
        storage_id=finding.storage_id,
        previous_storage_id=finding.previous_storage_id,
        timestamp=finding.timestamp,
    )


def build_drift_sensor(
    assets: Iterable[CoercibleToWatchedAsset] | None = None,
    *,
    name: str = "ubunye_drift_sensor",
    flag_reasons: Iterable[str] = drift.DEFAULT_FLAG_REASONS,
    strict_sources: bool = False,
    alert_job: dg.JobDefinition | UnresolvedAssetJobDefinition | str | None = None,
    minimum_interval_seconds: int = 60,
    max_events_per_tick: int = 200,
    tick_time_budget_seconds: float | None = 30.0,
    use_lineage_store: bool = True,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    on_drift: DriftHook | str | None = None,
    on_drift_timeout_seconds: float = DEFAULT_HOOK_TIMEOUT_SECONDS,
    storage_options: Mapping[str, Any] | None = None,
) -> dg.SensorDefinition:
    """A sensor that judges every new materialisation of the watched assets for drift.

    `assets=None` watches every asset whose materialisations carry Ubunye metadata. A flagged
    materialisation tags its run `ubunye/drift=<reason>`, fails the `ubunye_reproducible` check
    and, when `alert_job` (a job definition or the name of one) is given, requests one run of it.
    `on_drift` (a callable or its import path) gets each flagged `DriftVerdict` once, within
    `on_drift_timeout_seconds` a tick. `strict_sources` judges assets that read no asset strictly,
    as `ubunye/deterministic` does; records are read with `storage_options`.
    """
    assets = None if assets is None else list(assets)
    validate_declared_expectations(assets or ())
    settings = DriftSettings(
        flag_reasons=flag_reasons,
        strict_sources=strict_sources,
        deterministic_keys=declared_deterministic(assets or ()),
        max_events_per_tick=max_events_per_tick,
        tick_time_budget_seconds=tick_time_budget_seconds,
        use_lineage_store=use_lineage_store,
        on_drift_timeout_seconds=on_drift_timeout_seconds,
        access=StoreAccess(storage_options=dict(storage_options or {})),
    )
    asset_keys = None if assets is None else watched_asset_keys(assets)
    evaluate = _tick_function(
        settings, asset_keys, alert_job is not None, resolve_drift_hook(on_drift), name
    )
    return dg.SensorDefinition(
        name=name,
        evaluation_fn=evaluate,
        minimum_interval_seconds=minimum_interval_seconds,
        description=_sensor_description(asset_keys, settings),
        job=None if isinstance(alert_job, str) else alert_job,
        job_name=alert_job if isinstance(alert_job, str) else None,
        default_status=default_status,
    )


def _tick_function(
    settings: DriftSettings,
    asset_keys: list[dg.AssetKey] | None,
    alert: bool,
    on_drift: DriftHook | None,
    sensor_name: str,
) -> Callable[[dg.SensorEvaluationContext], dg.SensorResult]:
    """The sensor's evaluation function: `evaluate_drift_tick` with these settings."""

    def evaluate(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        return evaluate_drift_tick(
            context, settings, asset_keys, alert=alert, on_drift=on_drift, sensor_name=sensor_name
        )

    return evaluate


def _sensor_description(asset_keys: list[dg.AssetKey] | None, settings: DriftSettings) -> str:
    if asset_keys is None:
        watching = "every asset with Ubunye metadata"
    else:
        watching = ", ".join(key.to_user_string() for key in asset_keys)
    return (
        "Ubunye drift sensor: flags materialisations whose data changed while code and "
        f"environment did not. Watching: {watching}. Flags: {', '.join(settings.flag_reasons)}."
    )


def build_reproducibility_checks(
    assets: Iterable[CoercibleToWatchedAsset],
    *,
    name: str = "ubunye_reproducibility_checks",
    flag_reasons: Iterable[str] = drift.DEFAULT_FLAG_REASONS,
    strict_sources: bool = False,
    use_lineage_store: bool = True,
    storage_options: Mapping[str, Any] | None = None,
) -> list[dg.AssetChecksDefinition]:
    """Declare the `ubunye_reproducible` check on each asset, so the UI shows its verdicts.

    An asset stored through the Ubunye IO manager gets its verdict in its own step, as its
    receipt is written; the check's step judges, in a run, only the selected assets that no
    step judged, and executed by hand the asset's latest materialisation. The drift sensor
    reports the same verdicts for every materialisation; records are read with `storage_options`.
    """
    assets = list(assets)
    validate_declared_expectations(assets)
    settings = DriftSettings(
        flag_reasons=flag_reasons,
        strict_sources=strict_sources,
        deterministic_keys=declared_deterministic(assets),
        use_lineage_store=use_lineage_store,
        access=StoreAccess(storage_options=dict(storage_options or {})),
    )
    specs = [
        dg.AssetCheckSpec(
            CHECK_NAME,
            asset=key,
            description=(
                "Reproducible: the data does not change unless the code, the environment or an "
                "input did (judged as the Ubunye drift sensor judges)."
            ),
            metadata={CHECK_SETTINGS: _settings_of_one_asset(settings, key)},
        )
        for key in watched_asset_keys(assets)
    ]

    @dg.multi_asset_check(specs=specs, name=name, can_subset=True)
    def _reproducibility(context) -> Iterator[dg.AssetCheckResult]:
        # No annotation on context: Dagster refuses the postponed (string) annotation.
        run_id = context.op_execution_context.run_id
        judged = internals.checks_evaluated_in_run(context.instance, run_id)
        for check_key in sorted(
            set(context.selected_asset_check_keys) - judged,
            key=lambda k: k.asset_key.to_user_string(),
        ):
            yield _judge_latest(context.instance, check_key.asset_key, settings)

    return [internals.kept_as_checks(_reproducibility)]


def _settings_of_one_asset(settings: DriftSettings, key: dg.AssetKey) -> dict[str, Any]:
    return {
        "flag_reasons": list(settings.flag_reasons),
        "strict_sources": settings.strict_sources,
        "use_lineage_store": settings.use_lineage_store,
        "deterministic": key.to_user_string() in settings.deterministic_keys,
    }


def check_settings_of(spec: dg.AssetCheckSpec) -> DriftSettings | None:
    """How a `ubunye_reproducible` check declared by `build_reproducibility_checks` judges its
    asset (from the spec's metadata); None for a check declared otherwise."""
    value = (spec.metadata or {}).get(CHECK_SETTINGS)
    found = getattr(value, "value", value)
    if spec.key.name != CHECK_NAME or not isinstance(found, Mapping):
        return None
    key = spec.asset_key.to_user_string()
    return DriftSettings(
        flag_reasons=found["flag_reasons"],
        strict_sources=found["strict_sources"],
        use_lineage_store=found["use_lineage_store"],
        deterministic_keys=frozenset({key}) if found["deterministic"] else frozenset(),
    )


# --- event log -----------------------------------------------------------------------------


def _pending_records(
    instance: dg.DagsterInstance,
    asset_keys: Sequence[dg.AssetKey] | None,
    after_storage_id: int,
    limit: int,
) -> list[dg.EventLogRecord]:
    """The `limit` oldest materialisations after the storage id, across the given assets.

    Assets whose latest materialisation is not newer than the cursor are not queried. Each of the
    others is asked for a page of its oldest new records, about twice its share of `limit`: every
    record fetched is deserialised, so a backlog costs a tick about `limit` records, not `limit`
    per asset. See `_complete_prefix` for why the result is exactly the oldest overall.
    """
    asset_records = instance.get_asset_records(list(asset_keys) if asset_keys else None)
    #: Each new asset's latest materialisation, as its asset record names it.
    latest_of = {
        record.asset_entry.asset_key: latest
        for record in asset_records
        if (latest := record.asset_entry.last_materialization_storage_id or -1) > after_storage_id
    }
    if not latest_of:
        return []
    page = min(limit, 2 * -(-limit // len(latest_of)))
    found: list[dg.EventLogRecord] = []
    #: Where each asset that may have more new records was left: its last fetched storage id.
    left_at: dict[dg.AssetKey, int] = {}

    def fetch(key: dg.AssetKey, after: int, count: int) -> None:
        result = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, after_storage_id=after),
            limit=count,
            ascending=True,
        )
        found.extend(result.records)
        left_at.pop(key, None)
        # A short page that stops before the asset's latest materialisation is cut all the
        # same: the storage leaves out rows it cannot read, so a short page is no proof of end.
        if result.records and (result.has_more or result.records[-1].storage_id < latest_of[key]):
            left_at[key] = result.records[-1].storage_id

    for key in latest_of:
        fetch(key, after_storage_id, page)
    while True:
        prefix, bound = _complete_prefix(found, left_at)
        if len(prefix) >= limit or bound is None:
            return prefix[:limit]
        bounding = min(left_at, key=left_at.__getitem__)
        fetch(bounding, bound, max(page, limit - len(prefix)))


def _complete_prefix(
    found: list[dg.EventLogRecord], left_at: Mapping[dg.AssetKey, int]
) -> tuple[list[dg.EventLogRecord], int | None]:
    """The fetched records no unfetched one can precede, in storage-id order, and their bound.

    An asset cut off at storage id N may hold more records just after N, so only the records up
    to the lowest such N are known to be all there is; the bound is None when no asset was cut.
    """
    found.sort(key=lambda record: record.storage_id)
    bound = min(left_at.values(), default=None)
    if bound is None:
        return found, None
    return [record for record in found if record.storage_id <= bound], bound


def _already_reported(
    instance: dg.DagsterInstance, pending: Sequence[dg.EventLogRecord], after_storage_id: int
) -> set[int]:
    """The pending materialisations a sensor has already reported a `ubunye_reproducible`
    verdict of (the daemon reports a tick's verdicts before it stores the tick's cursor)."""
    earliest: dict[dg.AssetKey, float] = {}
    for record in pending:
        key = _asset_key(record)
        earliest[key] = min(earliest.get(key, record.timestamp), record.timestamp)
    found: set[int] = set()
    for key, timestamp in earliest.items():
        check_key = dg.AssetCheckKey(key, CHECK_NAME)
        # A verdict is created after its materialisation; the margin absorbs clock skew between
        # the step's machine and the daemon's, which stamp the two.
        not_before = timestamp - VERDICT_CLOCK_SKEW_SECONDS
        found |= internals.storage_ids_judged_outside_runs(
            instance, check_key, after_storage_id, not_before
        )
    return found


def _judge_record(
    instance: dg.DagsterInstance,
    record: dg.EventLogRecord,
    values: Mapping[str, Any],
    settings: DriftSettings,
    latest: dict[tuple[dg.AssetKey, str | None], tuple[dg.EventLogRecord, drift.DriftEvidence]],
    records_cache: dict[str, RunRecord | None],
) -> Finding:
    """Judge one materialisation; `latest` remembers this tick's receipts per asset and partition.

    Records are judged in storage-id order and a tick holds every materialisation between the
    cursor and its last record, so a remembered receipt is always the true predecessor.
    """
    key = _asset_key(record)
    partition = record.partition_key
    notes: list[str] = []
    receipt = receipt_from(values, tags_of(record), settings, records_cache, notes)
    remembered = latest.get((key, partition))
    if remembered is not None:
        previous, previous_receipt = remembered
    else:
        previous = previous_record(instance, key, partition, record.storage_id)
        previous_receipt = receipt_of(previous, settings, records_cache, notes)
    latest[(key, partition)] = (record, receipt)
    return finding_against(
        key,
        partition,
        (record.storage_id, record.run_id, record.timestamp),
        receipt,
        previous,
        previous_receipt,
        settings,
        notes,
    )


def _judge_latest(
    instance: dg.DagsterInstance, key: dg.AssetKey, settings: DriftSettings
) -> dg.AssetCheckResult:
    """The check's own evaluation: judge the asset's latest materialisation now."""
    latest = instance.fetch_materializations(key, limit=1).records
    if not latest:
        return dg.AssetCheckResult(
            asset_key=key,
            check_name=CHECK_NAME,
            passed=True,
            description="Not judged: the asset has never been materialised.",
            metadata={"ubunye/verdict": drift.JudgementVerdict.NOT_JUDGED.value},
        )
    record = latest[0]
    finding = _judge_record(instance, record, metadata_values(record), settings, {}, {})
    evaluation = check_evaluation_for(finding, settings.flag_reasons, settings.access)
    return dg.AssetCheckResult(
        asset_key=key,
        check_name=CHECK_NAME,
        passed=evaluation.passed,
        severity=evaluation.severity,
        description=evaluation.description,
        metadata=dict(evaluation.metadata),
    )


def _with_definitions(
    settings: DriftSettings, context: dg.SensorEvaluationContext
) -> DriftSettings:
    """The settings with the `ubunye/deterministic` declarations of the code location's assets
    (none when the sensor is evaluated without its definitions, as in a bare test context)."""
    repository = context.repository_def
    if repository is None:
        return settings
    declared = declared_deterministic(repository.assets_defs_by_key.values())
    return settings.model_copy(
        update={"deterministic_keys": settings.deterministic_keys | declared}
    )


def _asset_key(record: dg.EventLogRecord) -> dg.AssetKey:
    key = record.asset_key
    if key is None:
        raise ValueError(f"event log record {record.storage_id} is not an asset event")
    return key


# --- what users see --------------------------------------------------------------------------


def _alert_request(finding: Finding) -> dg.RunRequest:
    tags = {
        DRIFT_TAG: finding.judgement.reason,
        ALERT_ASSET_TAG: finding.asset_key.to_user_string(),
    }
    if finding.run_id:
        tags[ALERT_RUN_TAG] = finding.run_id
    if finding.partition is not None:
        tags[ALERT_PARTITION_TAG] = finding.partition
    return dg.RunRequest(run_key=f"ubunye_drift:{finding.storage_id}", tags=tags)


def _tick_summary(judged: int, flag_lines: Sequence[str]) -> str:
    """The skip reason of a tick that judged something: the counts, then one line per flag."""
    counts = f"judged {judged} materialisation(s), {len(flag_lines)} flagged"
    if not flag_lines:
        return counts
    shown = list(flag_lines[:MAX_FLAGS_IN_SKIP_REASON])
    if len(flag_lines) > len(shown):
        shown.append(f"... and {len(flag_lines) - len(shown)} more in this tick's logs")
    return "\n".join([f"{counts}:", *shown])


def _previous_run_text(finding: Finding) -> str:
    if finding.previous_run_id:
        return f"run {finding.previous_run_id}"
    return "a materialisation outside any run"


def _why(judgement: drift.Judgement) -> str | None:
    """Why a reason means drift, for the reasons whose name does not say it."""
    if judgement.reason == drift.SAME_INPUTS:
        return "code, environment, config and every upstream are unchanged (non-determinism)"
    if judgement.reason == drift.INPUTS_UNKNOWN:
        return "an upstream has neither a digest nor a data version, so it cannot be compared"
    return None


def _describe(finding: Finding, flag_reasons: Iterable[str]) -> str:
    judgement = finding.judgement
    previous = finding.previous_run_id or "a materialisation outside any run"
    outcome = judgement.outcome(tuple(flag_reasons))
    if judgement.verdict is drift.JudgementVerdict.UNCHANGED:
        return f"Reproduced: same data as the previous materialisation (run {previous})."
    if judgement.verdict is drift.JudgementVerdict.NOT_JUDGED:
        return f"Not judged: {judgement.reason}."
    why = _why(judgement)
    if why is None:
        return f"Data changed since run {previous}: {outcome}."
    return f"Data changed since run {previous}: {outcome}; {why}."


def _evaluation_metadata(
    finding: Finding, flagged: bool, flag_reasons: tuple[str, ...], access: StoreAccess | None
) -> dict[str, Any]:
    judgement = finding.judgement
    current, previous = finding.receipt, finding.previous_receipt
    entries: dict[str, Any] = {
        "ubunye/verdict": judgement.verdict.value,
        "ubunye/outcome": judgement.outcome(flag_reasons),
        "ubunye/reason": judgement.reason,
        "ubunye/flagged": flagged,
        "ubunye/data_hash": current.data_hash,
        "ubunye/previous_data_hash": previous.data_hash if previous else None,
        "ubunye/code_hash": current.code_hash,
        "ubunye/previous_code_hash": previous.code_hash if previous else None,
        "ubunye/environment_hash": current.environment_hash,
        "ubunye/previous_environment_hash": previous.environment_hash if previous else None,
        "ubunye/partition": finding.partition,
        # Ids are text: Dagster plots a number as if it measured something.
        "ubunye/storage_id": _id_text(finding.storage_id),
        "ubunye/previous_storage_id": _id_text(finding.previous_storage_id),
    }
    if finding.run_id:
        entries["ubunye/run"] = dg.MetadataValue.dagster_run(finding.run_id)
    if finding.previous_run_id:
        entries["ubunye/previous_run"] = dg.MetadataValue.dagster_run(finding.previous_run_id)
    if judgement.moved_inputs:
        entries["ubunye/moved_inputs"] = dg.MetadataValue.json(list(judgement.moved_inputs))
    if judgement.unknown_inputs:
        entries["ubunye/unknown_inputs"] = dg.MetadataValue.json(list(judgement.unknown_inputs))
    if finding.notes:
        entries["ubunye/notes"] = dg.MetadataValue.json(list(finding.notes))
    if flagged and previous is not None:
        entries.update(_changed_rows_metadata(previous, current, access or StoreAccess()))
    return {key: value for key, value in entries.items() if value is not None}


def _id_text(storage_id: int | None) -> dg.TextMetadataValue | None:
    return dg.MetadataValue.text(str(storage_id)) if storage_id is not None else None


def _changed_rows_metadata(
    previous: drift.DriftEvidence, current: drift.DriftEvidence, access: StoreAccess
) -> dict[str, Any]:
    """Which rows drifted, from the two run records: per output the rows changed at most (the
    sketches) and up to 5 rows removed and added when both versions are still stored."""
    notes: list[str] = []
    paths = (previous.record_path, current.record_path)
    records = [read_run_record(path, notes, access) for path in paths if path]
    if len(records) != 2 or None in records:
        return {}
    try:
        found = drift_rows(records[0], records[1], sample=5, storage_options=access.storage_options)
    except Exception as exc:  # the verdict stands without the rows; say why they are missing
        return {"ubunye/rows_changed_error": f"{type(exc).__name__}: {exc}"}
    return {"ubunye/rows_changed": dg.MetadataValue.json(found)} if found else {}
