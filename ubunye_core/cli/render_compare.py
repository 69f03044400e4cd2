"""What ``ubunye-dagster lineage compare`` prints: the table of two runs' values and the drift
sensor's verdicts (for people), and the verdicts' JSON document."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from ubunye_core.cli.lines import NOT_RECORDED
from ubunye_core.records.drift import (
    DEFAULT_FLAG_REASONS,
    INPUTS_CHANGED,
    SAME_INPUTS,
    Judgement,
    JudgementVerdict,
)

if TYPE_CHECKING:
    from ubunye_core.records.compare import Comparison, DataHashVerdict, FieldChange
    from ubunye_core.records.model import RunRecord


def _short(value: Any) -> str:
    """A hash cut to its first 12 hex digits for a table cell; other values as text."""
    if value is None or value == "":
        return NOT_RECORDED
    text = str(value)
    if text.startswith("sha256:") and len(text) > 19:
        return text[:19] + "…"
    return text


def _field_verdict(change: FieldChange) -> Text:
    return Text("CHANGED", style="yellow") if change.changed else Text("unchanged", style="green")


def _data_verdict(verdict: DataHashVerdict) -> Text:
    if verdict.state == "unchanged":
        return Text("unchanged", style="green")
    if verdict.state == "changed":
        return Text("CHANGED", style="yellow")
    if verdict.state == "not comparable":
        methods = f"{verdict.method_a or 'no method'} vs {verdict.method_b or 'no method'}"
        return Text(f"not comparable ({methods})", style="yellow")
    return Text(f"unknown ({verdict.why})", style="yellow")


def compare_table(comparison: Comparison) -> Table:
    """``compare``: every compared value of run A and run B with its verdict."""
    a, b = comparison.a, comparison.b
    table = Table(
        title=(
            f"Comparing runs of {comparison.task}\n"
            f"A: {a.run_id}  {a.started_at[:19]}  {a.status}\n"
            f"B: {b.run_id}  {b.started_at[:19]}  {b.status}"
        ),
        title_justify="left",
    )
    for heading in ("WHAT", "A", "B", "VERDICT"):
        table.add_column(heading)
    for label in ("status", "duration_sec", "config_hash", "code_hash", "environment_hash"):
        change: FieldChange = getattr(comparison, label)
        table.add_row(label, _short(change.a), _short(change.b), _field_verdict(change))
    for name, move in comparison.environment_changes.items():
        table.add_row(f"  {name}", _short(move.a), _short(move.b), Text("moved", style="yellow"))
    for direction, steps in (("input", comparison.inputs), ("output", comparison.outputs)):
        for name, step in steps.items():
            table.add_section()
            table.add_row(
                f"{direction} {name}: rows",
                _short(step.row_count.a),
                _short(step.row_count.b),
                _field_verdict(step.row_count),
            )
            table.add_row(
                "  schema",
                _short(step.schema_hash.a),
                _short(step.schema_hash.b),
                _field_verdict(step.schema_hash),
            )
            table.add_row(
                "  data",
                _short(step.data_hash.a),
                _short(step.data_hash.b),
                _data_verdict(step.data_hash),
            )
    return table


def _drift_why(judgement: Judgement, flag_reasons: Sequence[str]) -> str:
    """One sentence saying what the drift judgement found and why."""
    if judgement.verdict is JudgementVerdict.UNCHANGED:
        return "same data as the previous run"
    if judgement.verdict is JudgementVerdict.NOT_JUDGED:
        return judgement.reason
    if judgement.verdict is JudgementVerdict.EXPLAINED and not judgement.is_flagged(flag_reasons):
        return f"data changed, explained: {judgement.detail}"
    same = "data changed under the same code, environment and config"
    if judgement.reason == SAME_INPUTS:
        return f"{same} while every upstream held (non-determinism)"
    if judgement.reason == INPUTS_CHANGED:
        return f"{same}; upstreams moved: {', '.join(judgement.moved_inputs)}"
    unknown = f" ({', '.join(judgement.unknown_inputs)})" if judgement.unknown_inputs else ""
    return f"{same}; the upstreams{unknown} have neither a digest nor a data version"


def drift_document(
    judgements: dict[str, Judgement],
    previous: RunRecord,
    current: RunRecord,
    flag_reasons: Sequence[str] = DEFAULT_FLAG_REASONS,
) -> dict[str, dict[str, Any]]:
    """``compare --json --drift``: per output, the sensor's verdict on the newer run."""
    return {
        name: {
            "verdict": judgement.verdict.value,
            "reason": judgement.drift_reason,
            "flagged": judgement.is_flagged(flag_reasons),
            "outcome": judgement.outcome(flag_reasons),
            "inputs_moved": list(judgement.moved_inputs),
            "inputs_unknown": list(judgement.unknown_inputs),
            "why": _drift_why(judgement, flag_reasons),
            "previous_run_id": previous.run_id,
            "current_run_id": current.run_id,
        }
        for name, judgement in judgements.items()
    }


_OUTCOME_STYLE = {
    JudgementVerdict.UNCHANGED: "green",
    JudgementVerdict.EXPLAINED: "green",
    JudgementVerdict.NOT_JUDGED: "yellow",
    JudgementVerdict.DRIFT: "yellow",
}


def _drift_label(judgement: Judgement, flag_reasons: Sequence[str]) -> Text:
    flagged = judgement.is_flagged(flag_reasons)
    style = "bold red" if flagged else _OUTCOME_STYLE[judgement.verdict]
    return Text(judgement.outcome(flag_reasons), style=style)


def drift_lines(
    judgements: dict[str, Judgement],
    previous: RunRecord,
    current: RunRecord,
    flag_reasons: Sequence[str] = DEFAULT_FLAG_REASONS,
) -> Text:
    """``compare``: a line per output shared by both runs with the drift sensor's verdict."""
    lines = Text(
        f"Drift: run {current.run_id} judged against the earlier run {previous.run_id}, "
        "as the drift sensor judges\n"
    )
    if not judgements:
        lines.append("drift  (no output is in both runs)", style="dim")
    for index, (name, judgement) in enumerate(judgements.items()):
        if index:
            lines.append("\n")
        lines.append(f"drift  {name}: ")
        lines.append_text(_drift_label(judgement, flag_reasons))
    return lines
