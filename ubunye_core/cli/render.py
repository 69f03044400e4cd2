"""What ``ubunye-dagster lineage`` prints: JSON for scripts, rich tables and trees for people.

The JSON documents carry the keys the reference's ``ubunye lineage ... --json`` prints, so a script
can read either tool's output; ``trace`` adds the v2 evidence beside them.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from ubunye_core.records.compare import Comparison, DataHashVerdict, FieldChange
from ubunye_core.records.drift import (
    DEFAULT_FLAG_REASONS,
    INPUTS_CHANGED,
    SAME_INPUTS,
    Judgement,
    JudgementVerdict,
)
from ubunye_core.records.model import RunRecord, StepRecord
from ubunye_core.store import ReindexReport
from ubunye_core.store.listing import RunEntry
from ubunye_core.wording import counted

_STATUS_STYLE = {"success": "green", "error": "red", "running": "yellow"}
_NOT_RECORDED = "-"
#: Width of a trace value before it wraps (at a word boundary, under the value's first word).
_VALUE_WIDTH = 100
#: Width of a step detail's label (``hashed in``), so the values line up.
_LABEL_WIDTH = 9


def trace_document(record: RunRecord) -> dict[str, Any]:
    """``trace --json``: the reference's keys (task, run, steps), then the v2 evidence."""
    data = record.to_dict()
    return {
        "task": record.task_path,
        "run_id": record.run_id,
        "status": record.status,
        "error": record.error,
        "inputs": data["inputs"],
        "transform": record.task_name,
        "outputs": data["outputs"],
        "started_at": record.started_at,
        "ended_at": record.ended_at,
        "duration_sec": record.duration_sec,
        "record_version": record.record_version,
        "code_hash": record.code_hash,
        "environment": data["environment"],
        "environment_hash": record.environment_hash,
        "timings": data["timings"],
        "expectations": data["expectations"],
    }


def _rows(steps: list[StepRecord]) -> str:
    """Total rows over steps that recorded a count; ``-`` when none did (never a false 0)."""
    counts = [step.row_count for step in steps if step.row_count is not None]
    return f"{sum(counts):,}" if counts else _NOT_RECORDED


def _seconds(value: float | None) -> str:
    return f"{value:.3f}s" if value is not None else _NOT_RECORDED


def _status(status: str) -> Text:
    return Text(status, style=_STATUS_STYLE.get(status, "yellow"))


def _short(value: Any) -> str:
    """A hash cut to its first 12 hex digits for a table cell; other values as text."""
    if value is None or value == "":
        return _NOT_RECORDED
    text = str(value)
    if text.startswith("sha256:") and len(text) > 19:
        return text[:19] + "…"
    return text


def runs_table(task_path: str, records: list[RunRecord]) -> Table:
    """``list``: one row per run of one task, newest first."""
    table = Table(title=f"Runs of {task_path}", title_justify="left")
    for heading, justify in (
        ("RUN ID", "left"),
        ("STARTED", "left"),
        ("STATUS", "left"),
        ("DURATION", "right"),
        ("IN ROWS", "right"),
        ("OUT ROWS", "right"),
    ):
        table.add_column(heading, justify=justify, no_wrap=heading != "RUN ID")
    for record in records:
        table.add_row(
            record.run_id,
            record.started_at[:19],
            _status(record.status),
            _seconds(record.duration_sec),
            _rows(record.inputs),
            _rows(record.outputs),
        )
    return table


_SEARCH_COLUMNS = (("RUN ID", 36), ("TASK", 40), ("STARTED", 19), ("STATUS", 8))


def write_search_lines(
    entries: Iterable[RunEntry], write: Callable[[str], None], color: bool
) -> int:
    """``search``: a heading, one line per matching run as it comes (newest first), then the
    count; ``color`` paints the status. Returns the count."""
    count = 0
    for entry in entries:
        if count == 0:
            write("  ".join(name.ljust(width) for name, width in _SEARCH_COLUMNS) + "  DURATION\n")
        status = entry.status.ljust(8)
        if color:
            status = click.style(status, fg=_STATUS_STYLE.get(entry.status, "yellow"))
        write(
            f"{entry.run_id:<36}  {entry.task_path:<40}  {entry.started_at[:19]:<19}  "
            f"{status}  {_seconds(entry.duration_sec)}\n"
        )
        count += 1
    write(f"{counted(count, 'matching run')}\n" if count else "No matching lineage records.\n")
    return count


def write_json_list(documents: Iterable[str], write: Callable[[str], None]) -> None:
    """A JSON list of record documents (each as ``RunRecord.to_json`` writes it), streamed:
    byte for byte what ``json.dumps(list, indent=2)`` prints for the same records."""
    first = True
    for document in documents:
        write(("[\n  " if first else ",\n  ") + document.replace("\n", "\n  "))
        first = False
    write("[]\n" if first else "\n]\n")


class TerminalProgress:
    """A progress bar on stderr while the index reads many record files (at least
    ``threshold``); for terminals only, the caller decides that."""

    def __init__(self, threshold: int = 200) -> None:
        self._threshold = threshold
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            if total < self._threshold or done >= total:
                return
            self._bar = Progress(
                TextColumn("Indexing lineage records"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("index", total=total)
        self._bar.update(self._task, completed=done, total=total)
        if done >= total:
            self._bar.stop()
            self._bar = None


def reindex_document(report: ReindexReport) -> dict[str, Any]:
    """``reindex --json``: counts, the index file and each skipped file with its reason."""
    return {
        "ok": True,
        "index": report.index,
        "read": report.read,
        "unchanged": report.unchanged,
        "removed": report.removed,
        "skipped": len(report.unreadable),
        "unreadable": [{"file": file, "reason": why} for file, why in report.unreadable],
        "seconds": round(report.seconds, 3),
    }


def reindex_text(report: ReindexReport, root: Any) -> str:
    """``reindex``: one line of counts and where the index is."""
    indexed = report.read + report.unchanged - len(report.unreadable)
    return (
        f"Indexed {counted(indexed, 'record')} of {root} in {report.seconds:.1f}s: "
        f"{report.read:,} read, {report.unchanged:,} unchanged, {report.removed:,} removed, "
        f"{len(report.unreadable):,} skipped as unreadable.\nIndex: {report.index}"
    )


def _step_branch(parent: Tree, step: StepRecord) -> None:
    node = parent.add(Text.assemble(("[", "dim"), step.format or "?", ("] ", "dim"), step.name))
    rows = f"{step.row_count:,}" if step.row_count is not None else _NOT_RECORDED
    lines = [("location", step.location or _NOT_RECORDED), ("rows", rows)]
    if step.schema_hash:
        lines.append(("schema", step.schema_hash))
    if step.data_hash:
        lines.append(("data", step.data_hash))
    elif step.hash_error:
        lines.append(("data", f"unavailable ({step.hash_error})"))
    else:
        lines.append(("data", "not hashed"))
    if step.hash_method:
        lines.append(("method", step.hash_method))
    if step.hash_seconds is not None:
        lines.append(("hashed in", _seconds(step.hash_seconds)))
    if step.hash_basis:
        lines.append(("hash from", step.hash_basis))
    if step.hash_reused_from:
        lines.append(("hash of", f"{step.hash_reused_from} (same frame)"))
    for label, value in lines:
        node.add(labelled(label, value))
    if step.source_note:
        node.add(labelled("source", step.source_note, "yellow" if step.source_changed else ""))


def labelled(label: str, value: Any, style: str = "") -> Text:
    """``label: value`` with the labels of a step lined up; a long value wraps at word
    boundaries, each further line starting under the value's first word."""
    head = f"{label:<{_LABEL_WIDTH}}: "
    wrapped = textwrap.wrap(
        str(value), _VALUE_WIDTH, break_long_words=False, break_on_hyphens=False
    ) or [""]
    return Text(head + ("\n" + " " * len(head)).join(wrapped), style=style)


def _steps_branch(tree: Tree, title: str, steps: list[StepRecord]) -> None:
    branch = tree.add(Text(title, style="cyan"))
    if not steps:
        branch.add(Text("(none recorded)", style="dim"))
    for step in steps:
        _step_branch(branch, step)


def _evidence_branch(tree: Tree, record: RunRecord) -> None:
    branch = tree.add(Text("CODE AND ENVIRONMENT", style="cyan"))
    env = record.environment or {}
    packages = sorted((env.get("packages") or {}).items())
    width = max([len("environment"), *(len(name) for name, _ in packages)])
    python = f"{env.get('python', _NOT_RECORDED)} ({env.get('implementation', '?')})"
    machine = f"{env.get('platform', '?')} {env.get('machine', '')}".rstrip()
    branch.add(f"{'code':<{width}} : {record.code_hash or _NOT_RECORDED}")
    branch.add(f"{'python':<{width}} : {python} on {machine}")
    for name, version in packages:
        branch.add(f"{name:<{width}} : {version}")
    branch.add(f"{'environment':<{width}} : {record.environment_hash or _NOT_RECORDED}")
    if record.timings:
        _timings_branch(tree, record.timings)
    if record.expectations:
        checks = tree.add(Text("EXPECTATIONS", style="cyan"))
        for rule in record.expectations:
            passed = bool(rule.get("passed"))
            mark = "ok" if passed else str(rule.get("severity") or "failed")
            frame = rule.get("output", "?")
            frame = f"input {frame}" if rule.get("side") == "input" else frame
            counts = f"{rule.get('failed')}/{rule.get('total')}"
            line = f"{mark:<8} {frame}.{rule.get('rule', '?')}  {counts}"
            node = checks.add(Text(line, style="green" if passed else "yellow"))
            if rule.get("detail"):
                node.add(str(rule["detail"]))


def _timings_branch(tree: Tree, timings: Sequence[dict[str, Any]]) -> None:
    """TIMINGS: one line per step (what ran, the frame it read or wrote, its seconds), the
    columns as wide as their longest entry."""
    rows = [
        (str(t.get("step", "?")), str(t.get("input") or t.get("output") or ""), t.get("seconds"))
        for t in timings
    ]
    step_width = max(len(step) for step, _, _ in rows)
    where_width = max(len(where) for _, where, _ in rows)
    branch = tree.add(Text("TIMINGS", style="cyan"))
    for step, where, seconds in rows:
        shown = f"{seconds:.3f}s" if isinstance(seconds, (int, float)) else "-"
        branch.add(f"{step:<{step_width}}  {where:<{where_width}}  {shown:>10}")


def version_text(record: RunRecord) -> str:
    """The code version of what made the rows, said in Dagster's words: ``v3 (the asset's
    code_version)``, or that the asset sets none."""
    maker = record.model or "step"
    if record.version:
        return f"{record.version} (the {maker}'s code_version)"
    return f"not set (the {maker} has no code_version)"


def trace_tree(record: RunRecord) -> Tree:
    """``trace``: inputs, transform, outputs with hashes and row counts, then the v2 evidence."""
    head = Text.assemble(("Lineage trace: ", "bold"), (record.task_path, "bold"))
    tree = Tree(head)
    run = Text.assemble(
        f"run {record.run_id}  [", _status(record.status), f"]  {record.started_at[:19]}"
    )
    if record.duration_sec is not None:
        run.append(f"  ({_seconds(record.duration_sec)})")
    tree.add(run)
    if record.error:
        tree.add(Text(f"error: {record.error}", style="red"))
    if record.model or record.version:
        tree.add(Text(f"code version: {version_text(record)}"))
    _steps_branch(tree, "INPUTS", record.inputs)
    tree.add(Text("TRANSFORM", style="cyan")).add(record.task_name)
    _steps_branch(tree, "OUTPUTS", record.outputs)
    if record.record_version >= 2:
        _evidence_branch(tree, record)
    else:
        tree.add(
            Text(
                f"record version {record.record_version}: no code, environment, timings or "
                f"expectations were recorded",
                style="dim",
            )
        )
    return tree


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


def make_console(*, stderr: bool = False) -> Console:
    """A console on the current stdout (or stderr), wide when not a terminal: hashes stay whole."""
    console = Console(stderr=stderr, highlight=False, soft_wrap=False)
    if not console.is_terminal:
        console = Console(stderr=stderr, highlight=False, width=200)
    return console
