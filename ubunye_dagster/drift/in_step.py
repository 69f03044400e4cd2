"""The drift judgement made in an output's own step: the summary entry people read in the UI and,
when the run evaluates it, the ``ubunye_reproducible`` verdict."""

from __future__ import annotations

import dagster as dg

from ubunye_core.locations import StoreAccess
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.drift.check_spec import configured_settings
from ubunye_dagster.drift.reproducibility import judge_in_step, report_reproducibility
from ubunye_dagster.drift.summary import summary_metadata
from ubunye_dagster.receipts.materialisations import ask_previous_ahead
from ubunye_dagster.receipts.saved import Judged, SavedReceipt


class InStepJudge:
    """Judges an asset output's saved receipt against the asset's previous materialisation."""

    def prepare(self, step_context: internals.StepExecutionContext) -> None:
        """Start asking for the previous materialisation of each asset the step writes (one
        partition each), so it is at hand when the step's outputs are judged."""
        for _, key, partition in internals.one_partition_outputs(step_context):
            ask_previous_ahead(step_context, key, partition)

    def judge(self, context: dg.OutputContext, saved: SavedReceipt, access: StoreAccess) -> Judged:
        """The summary entry, and the ``ubunye_reproducible`` verdict to report when the run
        evaluates that check (the summary shows the same finding)."""
        verdict = judge_in_step(context, saved.partition_key, saved.metadata, access)
        summary = summary_metadata(
            internals.instance_of(context.step_context),
            context.asset_key,
            saved.partition_key,
            saved.record,
            saved.output,
            record_path=saved.record_path,
            input_asset_keys=saved.input_asset_keys,
            settings=configured_settings(context.step_context, context.asset_key),
            finding=verdict.finding if verdict is not None else None,
            step_context=context.step_context,
        )

        def report() -> None:
            if verdict is not None:
                report_reproducibility(context, verdict)

        return Judged(metadata=summary, report=report)
