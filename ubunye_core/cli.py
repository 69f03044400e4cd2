"""``ubunye-dagster lineage list|show|trace|compare|search``: read the run records of a use case.

Flags are the reference CLI's (``-d/--usecase-dir -u -p -t --run-id --run-id1 --run-id2
--lineage-dir --json``), so the same command line works with ``ubunye lineage``. ``--asset a/b``
finds a Dagster asset's task folder instead of ``-t``. Every failure is one ``error:`` line on
stderr and exit code 1 (2 for a wrong command line); with ``--json`` stdout also gets
``{"ok": false, "error": ...}``.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

import click
from upath import UPath

from ubunye_core.cli_render import (
    compare_table,
    drift_document,
    drift_lines,
    make_console,
    runs_table,
    search_table,
    trace_document,
    trace_tree,
)
from ubunye_core.compare import compare
from ubunye_core.drift import judge_records
from ubunye_core.record import RunRecord
from ubunye_core.store import (
    LINEAGE_SUBDIR,
    LineageStore,
    LineageStoreError,
    UnreadableRecordWarning,
    task_name_for_key,
)

DEFAULT_LINEAGE_DIR = "/".join(LINEAGE_SUBDIR)


class CliError(Exception):
    """A problem to report as one line, without a traceback."""


def _print_json(document: Any) -> None:
    click.echo(json.dumps(document, indent=2, ensure_ascii=False, default=str))


def _open_store(usecase_dir: str, lineage_dir: str) -> LineageStore:
    """The store at ``--lineage-dir`` (a URL, an absolute path, or a path under ``-d``)."""
    if "://" in lineage_dir:
        return LineageStore(lineage_dir)
    return LineageStore(UPath(usecase_dir) / lineage_dir)


def _asset_parts(asset: str) -> list[str]:
    parts = asset.strip("/").split("/")
    if not all(parts):
        raise CliError(f"--asset {asset!r} is not an asset key like 'a/b'")
    return parts


def resolve_task(
    store: LineageStore,
    usecase: str | None,
    package: str | None,
    task: str | None,
    asset: str | None,
) -> str:
    """The ``usecase/package/task`` named by ``-u -p -t``, or found for ``--asset``."""
    if asset is not None:
        if task is not None:
            raise CliError("give -t/--task or --asset, not both")
        name = task_name_for_key(_asset_parts(asset))
        found = store.task_paths(usecase, package, name)
        if not found:
            where = "/".join(p for p in (usecase, package) if p) or str(store.root)
            raise CliError(f"no records of asset {asset!r} (task folder {name!r}) under {where}")
        if len(found) > 1:
            raise CliError(
                f"asset {asset!r} has records under {len(found)} use cases or packages: "
                f"{', '.join(found)}; narrow it with -u/-p"
            )
        return found[0]
    missing = [
        flag for flag, value in (("-u", usecase), ("-p", package), ("-t", task)) if not value
    ]
    if missing:
        raise CliError(f"missing {', '.join(missing)}: give -u, -p and -t, or --asset")
    return f"{usecase}/{package}/{task}"


def _latest(store: LineageStore, task_path: str, run_id: str | None) -> RunRecord:
    if run_id:
        return store.load(task_path, run_id)
    record = store.latest(task_path)
    if record is None:
        raise CliError(f"no lineage records for task {task_path} in {store.root}")
    return record


def _started(record: RunRecord) -> datetime | None:
    try:
        started = datetime.fromisoformat(record.started_at)
    except ValueError:
        return None
    return started if started.tzinfo else started.replace(tzinfo=timezone.utc)


def earlier_first(a: RunRecord, b: RunRecord) -> tuple[RunRecord, RunRecord]:
    """The two runs as (previous, current) by ``started_at``; ``a`` first on a tie or when a
    time cannot be read."""
    started_a, started_b = _started(a), _started(b)
    if started_a is not None and started_b is not None and started_b < started_a:
        return b, a
    return a, b


def _where(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options naming the records: use case folder, lineage folder, and --json."""
    for option in reversed(
        [
            click.option(
                "-d", "--usecase-dir", default=".", show_default=True, help="Use case folder."
            ),
            click.option(
                "--lineage-dir",
                default=DEFAULT_LINEAGE_DIR,
                show_default=True,
                help="Records folder, under -d unless absolute or a URL (s3://..., memory://...).",
            ),
            click.option("--json", "as_json", is_flag=True, help="Print one JSON document."),
        ]
    ):
        func = option(func)
    return func


def _task_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """-u -p -t, or --asset."""
    for option in reversed(
        [
            click.option("-u", "--usecase", default=None, help="Use case."),
            click.option("-p", "--package", default=None, help="Package (Dagster: asset group)."),
            click.option("-t", "--task", default=None, help="Task (Dagster: encoded asset key)."),
            click.option("--asset", default=None, help="A Dagster asset key 'a/b' instead of -t."),
        ]
    ):
        func = option(func)
    return func


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """ubunye-dagster: receipts of Dagster asset materialisations (Ubunye ADR 006)."""


@cli.group()
def lineage() -> None:
    """Inspect run records under <usecase-dir>/.ubunye/lineage."""


@lineage.command("list")
@_where
@_task_options
@click.option("-n", "--n", "limit", default=10, show_default=True, help="How many recent runs.")
def list_command(
    usecase_dir: str,
    lineage_dir: str,
    as_json: bool,
    usecase: str | None,
    package: str | None,
    task: str | None,
    asset: str | None,
    limit: int,
) -> None:
    """A task's recent runs, newest first."""
    store = _open_store(usecase_dir, lineage_dir)
    task_path = resolve_task(store, usecase, package, task, asset)
    records = store.list_runs(task_path, limit=limit)
    if as_json:
        _print_json([record.to_dict() for record in records])
    elif not records:
        make_console().print(f"No lineage records for {task_path} in {store.root}.")
    else:
        make_console().print(runs_table(task_path, records))


@lineage.command("show")
@_where
@_task_options
@click.option("--run-id", default=None, help="A run id or a unique prefix (default: latest).")
def show_command(
    usecase_dir: str,
    lineage_dir: str,
    as_json: bool,
    usecase: str | None,
    package: str | None,
    task: str | None,
    asset: str | None,
    run_id: str | None,
) -> None:
    """One run record as JSON (the latest, or --run-id)."""
    store = _open_store(usecase_dir, lineage_dir)
    record = _latest(store, resolve_task(store, usecase, package, task, asset), run_id)
    click.echo(record.to_json())


@lineage.command("trace")
@_where
@_task_options
@click.option("--run-id", default=None, help="A run id or a unique prefix (default: latest).")
def trace_command(
    usecase_dir: str,
    lineage_dir: str,
    as_json: bool,
    usecase: str | None,
    package: str | None,
    task: str | None,
    asset: str | None,
    run_id: str | None,
) -> None:
    """What a run read, did and wrote: hashes, row counts, code, environment, timings, checks."""
    store = _open_store(usecase_dir, lineage_dir)
    record = _latest(store, resolve_task(store, usecase, package, task, asset), run_id)
    if as_json:
        _print_json(trace_document(record))
    else:
        make_console().print(trace_tree(record))


@lineage.command("compare")
@_where
@_task_options
@click.option("--run-id1", default=None, help="Run A (default: the second newest run).")
@click.option("--run-id2", default=None, help="Run B (default: the newest run).")
@click.option(
    "--drift",
    "with_drift",
    is_flag=True,
    help="Add the drift verdict to --json as key 'drift' (the table always shows it).",
)
def compare_command(
    usecase_dir: str,
    lineage_dir: str,
    as_json: bool,
    usecase: str | None,
    package: str | None,
    task: str | None,
    asset: str | None,
    run_id1: str | None,
    run_id2: str | None,
    with_drift: bool,
) -> None:
    """Two runs side by side: changed, unchanged, unknown or not comparable, and why; then the
    drift sensor's verdict on the newer run's outputs (unchanged, explained, drift, not judged)."""
    store = _open_store(usecase_dir, lineage_dir)
    task_path = resolve_task(store, usecase, package, task, asset)
    if bool(run_id1) != bool(run_id2):
        raise CliError("give both --run-id1 and --run-id2, or neither for the latest two runs")
    if run_id1 and run_id2:
        a, b = store.load(task_path, run_id1), store.load(task_path, run_id2)
    else:
        latest = store.list_runs(task_path, limit=2)
        if len(latest) < 2:
            raise CliError(f"compare needs two runs; {task_path} has {len(latest)} in {store.root}")
        b, a = latest
    comparison = compare(a, b)
    previous, current = earlier_first(a, b)
    judgements = judge_records(previous.to_dict(), current.to_dict())
    if as_json:
        document = comparison.to_dict()
        if with_drift:
            document["drift"] = drift_document(judgements, previous, current)
        _print_json(document)
    else:
        console = make_console()
        console.print(compare_table(comparison))
        console.print(drift_lines(judgements, previous, current))


@lineage.command("search")
@_where
@_task_options
@click.option("--status", default=None, help="Only runs with this status (success, error, ...).")
@click.option("--since", default=None, help="Only runs started on or after this ISO date/time.")
def search_command(
    usecase_dir: str,
    lineage_dir: str,
    as_json: bool,
    usecase: str | None,
    package: str | None,
    task: str | None,
    asset: str | None,
    status: str | None,
    since: str | None,
) -> None:
    """Runs across tasks, narrowed by -u/-p/-t (or --asset), --status and --since."""
    store = _open_store(usecase_dir, lineage_dir)
    if asset is not None and task is not None:
        raise CliError("give -t/--task or --asset, not both")
    name = task_name_for_key(_asset_parts(asset)) if asset is not None else task
    if package and not usecase:
        raise CliError("-p needs -u")
    prefix = "/".join(p for p in (usecase, package) if p) or None
    records = store.search(prefix, status=status, since=since, task=name)
    if as_json:
        _print_json([record.to_dict() for record in records])
    elif not records:
        make_console().print("No matching lineage records.")
    else:
        make_console().print(search_table(records))


def _fail(message: str, as_json: bool, code: int = 1) -> int:
    first_line = " ".join(message.split("\n")[0].split()) or "failed"
    if as_json:
        _print_json({"ok": False, "error": first_line})
    click.echo(f"error: {first_line}", err=True)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 failure, 2 wrong command line)."""
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnreadableRecordWarning)
        try:
            result = cli.main(args, prog_name="ubunye-dagster", standalone_mode=False)
            code = result if isinstance(result, int) else 0
        except click.exceptions.Exit as exc:
            code = exc.exit_code
        except click.exceptions.NoArgsIsHelpError as exc:
            # A bare group is a request for its help, not a mistake worth an error line.
            click.echo(exc.ctx.get_help() if exc.ctx else exc.format_message(), err=True)
            code = exc.exit_code
        except click.exceptions.Abort:
            code = _fail("aborted", as_json)
        except click.ClickException as exc:
            code = _fail(exc.format_message(), as_json, exc.exit_code)
        except (CliError, LineageStoreError, ValueError, OSError) as exc:
            code = _fail(str(exc), as_json)
        except Exception as exc:
            if os.environ.get("UBUNYE_DAGSTER_DEBUG"):
                raise
            code = _fail(f"unexpected {type(exc).__name__}: {exc}", as_json)
    for warning in caught:
        if issubclass(warning.category, UnreadableRecordWarning):
            click.echo(f"warning: {warning.message}", err=True)
        else:
            warnings.showwarning(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    return code


if __name__ == "__main__":
    sys.exit(main())
