"""The drift sensor: flags materialisations whose data changed while code and environment did not.

The sensor reads new asset materialisations from the Dagster event log (a cursor on storage ids,
so each is judged once across restarts), compares each receipt with the previous one of the same
asset and partition (`ubunye_core.records.drift`), tags the run that drifted, and reports the
`ubunye_reproducible` asset check evaluation. A tick that flags says so on the sensor's page, one
line per flagged materialisation (asset, run, why) in its skip reason and its logs, and hands
each verdict to the `on_drift` hook. The check's terms are in `check_spec`, its declaration in
`check_declaration`, the event log's paging in `event_pages`, the run tags in `run_tags` and the
words shown in the UI in `wording`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import dagster as dg
from pydantic import BaseModel, ConfigDict

from ubunye_core.records import drift
from ubunye_core.records.model import RunRecord
from ubunye_dagster.checks.expectations import validate_declared_expectations
from ubunye_dagster.dagster_internals import (
    UnresolvedAssetJobDefinition,
)
from ubunye_dagster.drift.check_spec import (
    CHECK_NAME,
    SEVERITY_BY_REASON,
    CoercibleToWatchedAsset,
    check_evaluation_for,
    declared_deterministic,
    watched_asset_keys,
)
from ubunye_dagster.drift.event_pages import (
    already_reported,
    materialised_asset_key,
    pending_records,
)
from ubunye_dagster.drift.hooks import (
    DriftHook,
    DriftVerdict,
    notify_drift,
    resolve_drift_hook,
)
from ubunye_dagster.drift.previous_materialisation import (
    Finding,
    filled_receipt,
    filled_receipt_of,
    finding_against,
)
from ubunye_dagster.drift.run_tags import alert_request, tag_drifted_runs
from ubunye_dagster.drift.settings import DriftSensorSettings, DriftSettings
from ubunye_dagster.drift.wording import (
    NOTHING_NEW,
    flag_line,
    sensor_description,
    tick_summary,
    why_drift,
)
from ubunye_dagster.receipts.materialisations import (
    metadata_values,
    newest_materialisation,
    recorded_output,
    tags_of,
)
from ubunye_dagster.receipts.metadata import RecordedOutput

#: The sensor's settings when given no others: their defaults, declared on the model.
_DEFAULT = DriftSensorSettings()
_DEFAULT_STATUS = dg.DefaultSensorStatus(_DEFAULT.default_status)


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
    pending = pending_records(
        instance, asset_keys, cursor.after_storage_id, settings.max_events_per_tick
    )
    findings: list[Finding] = []
    latest: dict[tuple[dg.AssetKey, str | None], tuple[dg.EventLogRecord, drift.DriftEvidence]] = {}
    records_cache: dict[str, RunRecord | None] = {}
    last_looked_at = cursor.after_storage_id
    reported = already_reported(instance, pending, cursor.after_storage_id)
    for index, record in enumerate(pending):
        if (
            index > 0
            and settings.tick_time_budget_seconds is not None
            and time.monotonic() - started > settings.tick_time_budget_seconds
        ):
            break
        last_looked_at = record.storage_id
        values = metadata_values(record)
        receipt = RecordedOutput.from_metadata(values, tags_of(record))
        where = (materialised_asset_key(record), record.partition_key)
        if record.storage_id in reported:
            # Judged by a tick whose verdicts were stored but not its cursor (the daemon ended
            # in between): remembered as the next one's predecessor, not judged or told again.
            latest[where] = (record, filled_receipt(receipt, settings, records_cache, []))
            continue
        if asset_keys is None and not drift.carries_ubunye_metadata(values):
            # Remembered all the same: a later receipt's predecessor is this record, as it
            # would be if looked up in the event log.
            latest[where] = (record, receipt)
            continue
        findings.append(_judge_record(instance, record, receipt, settings, latest, records_cache))
    return findings, DriftCursor(after_storage_id=last_looked_at)


def evaluate_drift_tick(
    context: dg.SensorEvaluationContext,
    settings: DriftSettings,
    asset_keys: list[dg.AssetKey] | None,
    *,
    alert: bool,
    on_drift: DriftHook | None = None,
    sensor_name: str = _DEFAULT.name,
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
    run_requests = [alert_request(f) for f in flagged] if alert else []
    result = dg.SensorResult(
        run_requests=run_requests,
        # Without run requests Dagster records the tick as skipped; say what it did.
        skip_reason=None if run_requests else tick_summary(len(findings), lines),
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
        explanation=why_drift(judgement),
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
    name: str = _DEFAULT.name,
    flag_reasons: Iterable[str] = _DEFAULT.flag_reasons,
    strict_sources: bool = _DEFAULT.strict_sources,
    alert_job: dg.JobDefinition | UnresolvedAssetJobDefinition | str | None = None,
    minimum_interval_seconds: int = _DEFAULT.minimum_interval_seconds,
    max_events_per_tick: int = _DEFAULT.max_events_per_tick,
    tick_time_budget_seconds: float | None = _DEFAULT.tick_time_budget_seconds,
    use_lineage_store: bool = _DEFAULT.use_lineage_store,
    default_status: dg.DefaultSensorStatus = _DEFAULT_STATUS,
    on_drift: DriftHook | str | None = None,
    on_drift_timeout_seconds: float = _DEFAULT.on_drift_timeout_seconds,
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
    sensor = DriftSensorSettings(
        name=name,
        flag_reasons=flag_reasons,
        strict_sources=strict_sources,
        alert_job=alert_job if isinstance(alert_job, str) else None,
        minimum_interval_seconds=minimum_interval_seconds,
        max_events_per_tick=max_events_per_tick,
        tick_time_budget_seconds=tick_time_budget_seconds,
        use_lineage_store=use_lineage_store,
        default_status=dg.DefaultSensorStatus(default_status).value,
        on_drift_timeout_seconds=on_drift_timeout_seconds,
    )
    job = None if isinstance(alert_job, str) else alert_job
    return drift_sensor(sensor, assets, on_drift, storage_options, alert_job=job)


def drift_sensor(
    sensor: DriftSensorSettings,
    assets: Iterable[CoercibleToWatchedAsset] | None = None,
    on_drift: DriftHook | str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    alert_job: dg.JobDefinition | UnresolvedAssetJobDefinition | None = None,
) -> dg.SensorDefinition:
    """The drift sensor ``sensor`` describes (`build_drift_sensor`), its alert job given as a
    definition in ``alert_job`` or by name in the settings."""
    assets = None if assets is None else list(assets)
    validate_declared_expectations(assets or ())
    deterministic = declared_deterministic(assets or ())
    settings = DriftSettings.of_terms(sensor, deterministic, storage_options)
    asset_keys = None if assets is None else watched_asset_keys(assets)
    evaluate = _tick_function(
        settings,
        asset_keys,
        alert_job is not None or sensor.alert_job is not None,
        resolve_drift_hook(on_drift),
        sensor.name,
    )
    return dg.SensorDefinition(
        name=sensor.name,
        evaluation_fn=evaluate,
        minimum_interval_seconds=sensor.minimum_interval_seconds,
        description=sensor_description(asset_keys, settings),
        job=alert_job,
        job_name=sensor.alert_job if alert_job is None else None,
        default_status=dg.DefaultSensorStatus(sensor.default_status),
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


def _judge_record(
    instance: dg.DagsterInstance,
    record: dg.EventLogRecord,
    receipt: drift.DriftEvidence,
    settings: DriftSettings,
    latest: dict[tuple[dg.AssetKey, str | None], tuple[dg.EventLogRecord, drift.DriftEvidence]],
    records_cache: dict[str, RunRecord | None],
) -> Finding:
    """Judge one materialisation (``receipt``: what its metadata and tags say); `latest`
    remembers this tick's receipts per asset and partition.

    Records are judged in storage-id order and a tick holds every materialisation between the
    cursor and its last record, so a remembered receipt is always the true predecessor.
    """
    key = materialised_asset_key(record)
    partition = record.partition_key
    notes: list[str] = []
    receipt = filled_receipt(receipt, settings, records_cache, notes)
    remembered = latest.get((key, partition))
    if remembered is not None:
        previous, previous_receipt = remembered
    else:
        previous = newest_materialisation(instance, key, partition, record.storage_id)
        previous_receipt = filled_receipt_of(previous, settings, records_cache, notes)
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


def judge_latest(
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
    finding = _judge_record(instance, record, recorded_output(record), settings, {}, {})
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
