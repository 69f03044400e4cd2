"""Tags the drift sensor puts on Dagster runs: the drift reason on the run that drifted, and
the asset, run and partition on an alert run request."""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg

from ubunye_core.records import drift
from ubunye_dagster.drift.previous_materialisation import (
    Finding,
)

#: Run tag set on a run that produced a flagged materialisation; the value is the drift reason.
DRIFT_TAG = "ubunye/drift"


#: Tags on an alert run request, naming what drifted.
ALERT_ASSET_TAG = "ubunye/drift_asset"


ALERT_RUN_TAG = "ubunye/drift_run_id"


ALERT_PARTITION_TAG = "ubunye/drift_partition"


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


def alert_request(finding: Finding) -> dg.RunRequest:
    tags = {
        DRIFT_TAG: finding.judgement.reason,
        ALERT_ASSET_TAG: finding.asset_key.to_user_string(),
    }
    if finding.run_id:
        tags[ALERT_RUN_TAG] = finding.run_id
    if finding.partition is not None:
        tags[ALERT_PARTITION_TAG] = finding.partition
    return dg.RunRequest(run_key=f"ubunye_drift:{finding.storage_id}", tags=tags)
