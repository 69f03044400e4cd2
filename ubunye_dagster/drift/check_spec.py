"""The ``ubunye_reproducible`` asset check's terms: the assets it watches, the settings it
judges by, and a verdict as its evaluation (severity by drift reason, the changed rows)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import dagster as dg

from ubunye_core.diff.report import drift_rows
from ubunye_core.locations import StoreAccess
from ubunye_core.records import drift
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.dagster_internals import (
    AssetCheckEvaluationTargetMaterializationData,
    StepExecutionContext,
)
from ubunye_dagster.drift.previous_materialisation import (
    Finding,
    read_run_record,
)
from ubunye_dagster.drift.settings import DriftSettings
from ubunye_dagster.drift.wording import finding_description
from ubunye_dagster.receipts import metadata as metadata_keys
from ubunye_dagster.receipts.metadata import plain

#: Name of the asset check the sensor reports on every watched asset.
CHECK_NAME = "ubunye_reproducible"


#: Metadata of the check's spec: how it judges (flag reasons, strict sources, the lineage store,
#: a declared deterministic asset), read again where the asset's own step judges it.
CHECK_SETTINGS = "ubunye/check_settings"


#: Severity of a failed check by drift reason: non-determinism is an error, the others a warning.
SEVERITY_BY_REASON: Mapping[str, dg.AssetCheckSeverity] = {
    drift.SAME_INPUTS: dg.AssetCheckSeverity.ERROR,
    drift.INPUTS_CHANGED: dg.AssetCheckSeverity.WARN,
    drift.INPUTS_UNKNOWN: dg.AssetCheckSeverity.WARN,
}


CoercibleToWatchedAsset = (
    dg.AssetKey | str | Sequence[str] | dg.AssetsDefinition | dg.AssetSpec | dg.SourceAsset
)


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
        description=finding_description(finding, flag_reasons),
        metadata=check_evaluation_metadata(finding, flagged, tuple(flag_reasons), access),
        target_materialization_data=None
        if finding.storage_id is None
        else AssetCheckEvaluationTargetMaterializationData(
            storage_id=finding.storage_id, run_id=finding.run_id, timestamp=finding.timestamp
        ),
    )


def check_settings_of(spec: dg.AssetCheckSpec) -> DriftSettings | None:
    """How a `ubunye_reproducible` check declared by `build_reproducibility_checks` judges its
    asset (from the spec's metadata); None for a check declared otherwise."""
    found = plain((spec.metadata or {}).get(CHECK_SETTINGS))
    if spec.key.name != CHECK_NAME or not isinstance(found, Mapping):
        return None
    return DriftSettings.of_check_metadata(found, spec.asset_key.to_user_string())


def configured_settings(
    step_context: StepExecutionContext, asset_key: dg.AssetKey
) -> DriftSettings:
    """How the asset's ``ubunye_reproducible`` check in the step's job judges it (the settings
    it was declared with); the default settings when the job declares no such check."""
    spec = internals.check_spec_in_job(step_context, dg.AssetCheckKey(asset_key, CHECK_NAME))
    settings = check_settings_of(spec) if spec is not None else None
    return settings if settings is not None else DriftSettings()


def check_evaluation_metadata(
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
        "ubunye/storage_id": storage_id_text(finding.storage_id),
        "ubunye/previous_storage_id": storage_id_text(finding.previous_storage_id),
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
        entries.update(changed_rows_metadata(previous, current, access or StoreAccess()))
    return {key: value for key, value in entries.items() if value is not None}


def storage_id_text(storage_id: int | None) -> dg.TextMetadataValue | None:
    return dg.MetadataValue.text(str(storage_id)) if storage_id is not None else None


def changed_rows_metadata(
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
