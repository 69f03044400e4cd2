"""The asset's expectations as the write pipeline's gate: rules counted over the staged rows
before they are committed, a broken ``fail`` rule refusing the write and reported as failed
blocking checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dagster as dg

from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.checks.counts import RowsSeen, rule_counter_of
from ubunye_dagster.checks.expectation_checks import evaluation_metadata
from ubunye_dagster.checks.expectations import (
    ExpectationFailed,
    broken_fail_rules,
    check_rules,
    parse_rules,
)
from ubunye_dagster.receipts.metadata import EXPECTATIONS


class ExpectationGate:
    """Checks an output's rows against the rules in its ``ubunye/expectations`` metadata."""

    def check(
        self, context: dg.OutputContext, rows: Callable[[], RowsSeen], step_name: str
    ) -> list[dict[str, Any]]:
        """Each rule's result over ``rows()`` (read only when the asset declares rules)."""
        rules = parse_rules(context.definition_metadata.get(EXPECTATIONS))
        if not rules:
            return []
        return check_rules(rules, rule_counter_of(rows()), step_name)

    def refusal(self, step_name: str, results: list[dict[str, Any]]) -> BaseException | None:
        """The error that refuses the write when a rule of severity ``fail`` is broken."""
        broken = broken_fail_rules(results)
        return ExpectationFailed(step_name, broken) if broken else None

    def refused(self, context: dg.OutputContext, error: BaseException) -> None:
        """A refusal's broken rules as failed blocking checks (the step fails, so the checks'
        own step never runs to report them); other errors are not the gate's."""
        if isinstance(error, ExpectationFailed) and context.has_asset_key:
            report_refused_write(context, error)


def report_refused_write(context: dg.OutputContext, refusal: ExpectationFailed) -> None:
    """The broken ``fail`` rules as failed blocking checks (see ``expectation_checks``)."""
    evaluations = [
        dg.AssetCheckEvaluation(
            asset_key=context.asset_key,
            check_name=entry["rule"],
            passed=False,
            metadata=evaluation_metadata(entry),
            severity=dg.AssetCheckSeverity.ERROR,
            blocking=True,
            description="broken: the write was refused and the previous data stays in place",
        )
        for entry in refusal.broken
    ]
    internals.report_check_evaluations(context.step_context, evaluations)
