"""The ``ubunye_reproducible`` verdict given in the asset's own step, as its receipt is written.

``build_reproducibility_checks`` declares the check of many assets in one step, and Dagster runs
a step only when every step it waits for succeeded: a verdict given only there would be lost to
every asset of the run as soon as one of them failed. So the IO manager judges each
materialisation where it writes the receipt, with the check's own settings (kept in its spec's
metadata) and the drift sensor's judgement, and logs the evaluation in that step, before the step
ends: no process of its own, no wait for other assets. The check's step then judges only what no
asset step did (assets whose receipts came another way, or the check run by hand). The step
looks up the previous materialisation once: the receipt's summary shows the same finding.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import dagster as dg

from ubunye_core.locations import StoreAccess
from ubunye_core.records import drift
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.drift.check_spec import CHECK_NAME, check_evaluation_for, check_settings_of
from ubunye_dagster.drift.previous_materialisation import Finding, judge_before_storage
from ubunye_dagster.receipts.metadata import RecordedOutput
from ubunye_dagster.receipts.per_run import PerRun

#: The planned checks of this process's latest runs, by run id (a run's steps run in one process
#: in-process, each in its own under the multiprocess executor).
_PLANNED_BY_RUN: PerRun[frozenset[dg.AssetCheckKey]] = PerRun()


@dataclass(frozen=True)
class StepVerdict:
    """A materialisation judged in its own step, and the flag reasons of the check it answers."""

    finding: Finding
    flag_reasons: tuple[str, ...]
    #: How the store is read (a flagged verdict's changed rows come from it).
    access: StoreAccess


def judge_in_step(
    context: dg.OutputContext,
    partition_key: str | None,
    entries: Mapping[str, Any],
    access: StoreAccess | None = None,
) -> StepVerdict | None:
    """The materialisation the output is about to make (``entries``: the receipt's metadata the
    IO manager adds next) judged with the check's own settings, when the run evaluates
    ``ubunye_reproducible`` on it (records read through ``access``, the IO manager's store
    options); None otherwise. A verdict that cannot be given is left to the
    check's step, and never fails the write."""
    try:
        return _judge(context, partition_key, entries, access or StoreAccess())
    except Exception as error:
        _warn_no_verdict(context, error)
        return None


def report_reproducibility(context: dg.OutputContext, verdict: StepVerdict) -> bool:
    """Log the verdict's ``ubunye_reproducible`` evaluation in the output's step. Returns whether
    it was logged; one that cannot be is left to the check's step, and never fails the write."""
    try:
        evaluation = check_evaluation_for(verdict.finding, verdict.flag_reasons, verdict.access)
        return internals.report_check_evaluations(context.step_context, [evaluation], context) == 1
    except Exception as error:
        _warn_no_verdict(context, error)
        return False


def _warn_no_verdict(context: dg.OutputContext, error: Exception) -> None:
    context.log.warning(
        f"{context.asset_key.to_user_string()}: no {CHECK_NAME} verdict in this step "
        f"({type(error).__name__}: {error}); the check's step gives it"
    )


def _judge(
    context: dg.OutputContext,
    partition_key: str | None,
    entries: Mapping[str, Any],
    access: StoreAccess,
) -> StepVerdict | None:
    step_context = context.step_context
    check_key = dg.AssetCheckKey(context.asset_key, CHECK_NAME)
    spec = internals.check_spec_in_job(step_context, check_key)
    settings = check_settings_of(spec) if spec is not None else None
    instance = internals.instance_of(step_context)
    if settings is None or instance is None:
        return None
    # The spec's metadata is shown in the UI, so the store's options come from the IO manager.
    settings = settings.model_copy(update={"access": access})
    run_id, _ = internals.run_and_step_of(step_context)
    if check_key not in _planned_checks(instance, run_id):
        return None
    receipt = _receipt(context, entries)
    finding = judge_before_storage(
        instance, context.asset_key, partition_key, receipt, settings, run_id, step_context
    )
    return StepVerdict(finding=finding, flag_reasons=settings.flag_reasons, access=access)


def _planned_checks(instance: dg.DagsterInstance, run_id: str) -> frozenset[dg.AssetCheckKey]:
    """The checks the run planned (fixed when it was created): read once per run and process,
    not once per output."""
    return _PLANNED_BY_RUN.setdefault(
        run_id, lambda: frozenset(internals.checks_planned_in_run(instance, run_id))
    )


def _receipt(context: dg.OutputContext, entries: Mapping[str, Any]) -> drift.DriftEvidence:
    """The receipt the materialisation will carry: its metadata (the output's, then ``entries``,
    then what was logged already, which keeps its value when the entries are added) and the
    upstream data versions Dagster will tag it with."""
    metadata = {**context.output_metadata, **entries, **context.get_logged_metadata()}
    versions = internals.upstream_data_versions(context.step_context, context.asset_key)
    return RecordedOutput.from_metadata(metadata).model_copy(
        update={"upstream_versions": drift.upstream_versions_from(versions)}
    )
