"""The drift sensor's words in the UI: a flagged materialisation's line, a tick's summary,
the sensor's description."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import dagster as dg

from ubunye_core.records import drift
from ubunye_dagster.drift.previous_materialisation import (
    Finding,
)
from ubunye_dagster.drift.settings import DriftSettings

#: The skip message of a tick that found no new materialisation.
NOTHING_NEW = "no new materialisations"


#: Flagged materialisations a tick's skip reason names one line each; its logs name them all.
MAX_FLAGS_IN_SKIP_REASON = 20


def flag_line(finding: Finding, flag_reasons: Iterable[str]) -> str:
    """The one line a tick shows for a flagged materialisation: which asset (and partition)
    drifted, in which run, and why."""
    judgement = finding.judgement
    asset = finding.asset_key.to_user_string()
    if finding.partition is not None:
        asset += f" (partition {finding.partition})"
    run = f"in run {finding.run_id}" if finding.run_id else "outside any run"
    line = f"{asset} drifted {run}: {judgement.outcome(tuple(flag_reasons))} since "
    line += previous_run_text(finding)
    why = why_drift(judgement)
    return f"{line}; {why}." if why else f"{line}."


def sensor_description(asset_keys: list[dg.AssetKey] | None, settings: DriftSettings) -> str:
    if asset_keys is None:
        watching = "every asset with Ubunye metadata"
    else:
        watching = ", ".join(key.to_user_string() for key in asset_keys)
    return (
        "Ubunye drift sensor: flags materialisations whose data changed while code and "
        f"environment did not. Watching: {watching}. Flags: {', '.join(settings.flag_reasons)}."
    )


def tick_summary(judged: int, flag_lines: Sequence[str]) -> str:
    """The skip reason of a tick that judged something: the counts, then one line per flag."""
    counts = f"judged {judged} materialisation(s), {len(flag_lines)} flagged"
    if not flag_lines:
        return counts
    shown = list(flag_lines[:MAX_FLAGS_IN_SKIP_REASON])
    if len(flag_lines) > len(shown):
        shown.append(f"... and {len(flag_lines) - len(shown)} more in this tick's logs")
    return "\n".join([f"{counts}:", *shown])


def previous_run_text(finding: Finding) -> str:
    if finding.previous_run_id:
        return f"run {finding.previous_run_id}"
    return "a materialisation outside any run"


def why_drift(judgement: drift.Judgement) -> str | None:
    """Why a reason means drift, for the reasons whose name does not say it."""
    if judgement.reason == drift.SAME_INPUTS:
        return "code, environment, config and every upstream are unchanged (non-determinism)"
    if judgement.reason == drift.INPUTS_UNKNOWN:
        return "an upstream has neither a digest nor a data version, so it cannot be compared"
    return None


def finding_description(finding: Finding, flag_reasons: Iterable[str]) -> str:
    judgement = finding.judgement
    previous = finding.previous_run_id or "a materialisation outside any run"
    outcome = judgement.outcome(tuple(flag_reasons))
    if judgement.verdict is drift.JudgementVerdict.UNCHANGED:
        return f"Reproduced: same data as the previous materialisation (run {previous})."
    if judgement.verdict is drift.JudgementVerdict.NOT_JUDGED:
        return f"Not judged: {judgement.reason}."
    why = why_drift(judgement)
    if why is None:
        return f"Data changed since run {previous}: {outcome}."
    return f"Data changed since run {previous}: {outcome}; {why}."
