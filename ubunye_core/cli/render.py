"""What ``ubunye-dagster lineage`` list, trace and reindex print: JSON for scripts, rich tables
and trees for people (``lines`` has search's output, ``render_compare`` compare's).

The JSON documents carry the keys the reference's ``ubunye lineage ... --json`` prints, so a script
can read either tool's output; ``trace`` adds the v2 evidence beside them.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from ubunye_core.cli.lines import NOT_RECORDED, STATUS_COLOURS, seconds_text
from ubunye_core.wording import counted

if TYPE_CHECKING:
    from rich.table import Table

    from ubunye_core.store import ReindexReport

#: A run record's document as ``RunRecord.to_dict`` gives it (every field present, the record
#: model's defaults filled in): what ``trace`` prints, so it builds no record model.
Document = Mapping[str, Any]
#: The fields of a record and of its steps that ``trace`` prints.
TRACED_FIELDS = frozenset({
    "task_path", "run_id", "status", "error", "inputs", "task_name", "outputs", "started_at",
    "ended_at", "duration_sec", "record_version", "code_hash", "environment",
    "environment_hash", "timings", "expectations", "model", "version",
})  # fmt: skip
TRACED_STEP_FIELDS = frozenset({
    "name", "format", "location", "row_count", "schema_hash", "data_hash", "hash_error",
    "hash_method", "hash_seconds", "hash_basis", "hash_reused_from", "source_note",
    "source_changed",
})  # fmt: skip


def holds_every_traced_field(document: Document) -> bool:
    """Whether ``document`` has every field ``trace`` prints, in the record and in each step (an
    index written by an older model may lack a newer field)."""
    steps = [*(document.get("inputs") or ()), *(document.get("outputs") or ())]
    return document.keys() >= TRACED_FIELDS and all(
        isinstance(step, Mapping) and step.keys() >= TRACED_STEP_FIELDS for step in steps
    )


#: Width of a trace value before it wraps (at a word boundary, under the value's first word).
_VALUE_WIDTH = 100
#: Width of a step detail's label (``hashed in``), so the values line up.
_LABEL_WIDTH = 9


def trace_document(record: Document) -> dict[str, Any]:
    """``trace --json``: the reference's keys (task, run, steps), then the v2 evidence."""
    return {
        "task": record["task_path"],
        "run_id": record["run_id"],
        "status": record["status"],
        "error": record["error"],
        "inputs": record["inputs"],
        "transform": record["task_name"],
        "outputs": record["outputs"],
        "started_at": record["started_at"],
        "ended_at": record["ended_at"],
        "duration_sec": record["duration_sec"],
        "record_version": record["record_version"],
        "code_hash": record["code_hash"],
        "environment": record["environment"],
        "environment_hash": record["environment_hash"],
        "timings": record["timings"],
        "expectations": record["expectations"],
    }


def _rows(steps: list[dict[str, Any]]) -> str:
    """Total rows over steps (as a record's document has them) that recorded a count; ``-``
    when none did (never a false 0)."""
    counts = [step["row_count"] for step in steps if step.get("row_count") is not None]
    return f"{sum(counts):,}" if counts else NOT_RECORDED


def _status(status: str) -> Text:
    return Text(status, style=STATUS_COLOURS.get(status, "yellow"))


def runs_table(task_path: str, documents: list[dict[str, Any]]) -> Table:
    """``list``: one row per run of one task, newest first, from the records' documents (as
    ``RunRecord.to_dict`` makes them: the index holds them, no record model is needed)."""
    # Imported here: trace, the commands most often run after list, draws no table.
    from rich.table import Table

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
    for document in documents:
        table.add_row(
            document["run_id"],
            document["started_at"][:19],
            _status(document["status"]),
            seconds_text(document["duration_sec"]),
            _rows(document["inputs"]),
            _rows(document["outputs"]),
        )
    return table


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


def _step_branch(parent: Tree, step: Document) -> None:
    node = parent.add(
        Text.assemble(("[", "dim"), step["format"] or "?", ("] ", "dim"), step["name"])
    )
    rows = f"{step['row_count']:,}" if step["row_count"] is not None else NOT_RECORDED
    lines = [("location", step["location"] or NOT_RECORDED), ("rows", rows)]
    if step["schema_hash"]:
        lines.append(("schema", step["schema_hash"]))
    if step["data_hash"]:
        lines.append(("data", step["data_hash"]))
    elif step["hash_error"]:
        lines.append(("data", f"unavailable ({step['hash_error']})"))
    else:
        lines.append(("data", "not hashed"))
    if step["hash_method"]:
        lines.append(("method", step["hash_method"]))
    if step["hash_seconds"] is not None:
        lines.append(("hashed in", seconds_text(step["hash_seconds"])))
    if step["hash_basis"]:
        lines.append(("hash from", step["hash_basis"]))
    if step["hash_reused_from"]:
        lines.append(("hash of", f"{step['hash_reused_from']} (same frame)"))
    for label, value in lines:
        node.add(labelled(label, value))
    if step["source_note"]:
        node.add(
            labelled("source", step["source_note"], "yellow" if step["source_changed"] else "")
        )


def labelled(label: str, value: Any, style: str = "") -> Text:
    """``label: value`` with the labels of a step lined up; a long value wraps at word
    boundaries, each further line starting under the value's first word."""
    head = f"{label:<{_LABEL_WIDTH}}: "
    wrapped = textwrap.wrap(
        str(value), _VALUE_WIDTH, break_long_words=False, break_on_hyphens=False
    ) or [""]
    return Text(head + ("\n" + " " * len(head)).join(wrapped), style=style)


def _steps_branch(tree: Tree, title: str, steps: Sequence[Document]) -> None:
    branch = tree.add(Text(title, style="cyan"))
    if not steps:
        branch.add(Text("(none recorded)", style="dim"))
    for step in steps:
        _step_branch(branch, step)


def _evidence_branch(tree: Tree, record: Document) -> None:
    branch = tree.add(Text("CODE AND ENVIRONMENT", style="cyan"))
    env = record["environment"] or {}
    packages = sorted((env.get("packages") or {}).items())
    width = max([len("environment"), *(len(name) for name, _ in packages)])
    python = f"{env.get('python', NOT_RECORDED)} ({env.get('implementation', '?')})"
    machine = f"{env.get('platform', '?')} {env.get('machine', '')}".rstrip()
    branch.add(f"{'code':<{width}} : {record['code_hash'] or NOT_RECORDED}")
    branch.add(f"{'python':<{width}} : {python} on {machine}")
    for name, version in packages:
        branch.add(f"{name:<{width}} : {version}")
    branch.add(f"{'environment':<{width}} : {record['environment_hash'] or NOT_RECORDED}")
    if record["timings"]:
        _timings_branch(tree, record["timings"])
    if record["expectations"]:
        checks = tree.add(Text("EXPECTATIONS", style="cyan"))
        for rule in record["expectations"]:
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


def version_text(record: Document) -> str:
    """The code version of what made the rows, said in Dagster's words: ``v3 (the asset's
    code_version)``, or that the asset sets none (an observation has none)."""
    maker = record["model"] or "step"
    if maker == "observation":
        return "none (an observation hashes a source's rows where they are stored)"
    if record["version"]:
        return f"{record['version']} (the {maker}'s code_version)"
    return f"not set (the {maker} has no code_version)"


def trace_tree(record: Document) -> Tree:
    """``trace``: inputs, transform, outputs with hashes and row counts, then the v2 evidence."""
    head = Text.assemble(("Lineage trace: ", "bold"), (record["task_path"], "bold"))
    tree = Tree(head)
    run = Text.assemble(
        f"run {record['run_id']}  [", _status(record["status"]), f"]  {record['started_at'][:19]}"
    )
    if record["duration_sec"] is not None:
        run.append(f"  ({seconds_text(record['duration_sec'])})")
    tree.add(run)
    if record["error"]:
        tree.add(Text(f"error: {record['error']}", style="red"))
    if record["model"] or record["version"]:
        tree.add(Text(f"code version: {version_text(record)}"))
    _steps_branch(tree, "INPUTS", record["inputs"])
    tree.add(Text("TRANSFORM", style="cyan")).add(record["task_name"])
    _steps_branch(tree, "OUTPUTS", record["outputs"])
    if record["record_version"] >= 2:
        _evidence_branch(tree, record)
    else:
        tree.add(
            Text(
                f"record version {record['record_version']}: no code, environment, timings or "
                f"expectations were recorded",
                style="dim",
            )
        )
    return tree


def make_console(*, stderr: bool = False) -> Console:
    """A console on the current stdout (or stderr), wide when not a terminal: hashes stay whole."""
    console = Console(stderr=stderr, highlight=False, soft_wrap=False)
    if not console.is_terminal:
        console = Console(stderr=stderr, highlight=False, width=200)
    return console
