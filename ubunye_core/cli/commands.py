"""``ubunye-dagster lineage list|show|trace|compare|search|reindex|diff|digest``: the run records
of a use case; ``ubunye-dagster clean``: remove what killed writers staged beside the data.

Flags are the reference CLI's (``-d/--usecase-dir -u -p -t --run-id --run-id1 --run-id2
--lineage-dir --json``), so the same command line works with ``ubunye lineage``. The help text is
click's, so the commands' docstrings are plain text whose first sentence is short enough to be
listed whole.
"""

from __future__ import annotations

import json
import sys
import warnings
from itertools import islice
from typing import Any

import click

from ubunye_core.cli.app import CliError, DiffTrouble, cli, lineage, print_json, write_out
from ubunye_core.cli.selection import (
    Selection,
    earlier_first,
    existing_folder,
    latest_document,
    latest_pair,
    latest_record,
    open_store,
    run_id_option,
    selected,
    storage_options_option,
    two_runs,
    with_store_options,
)

# Only what every command line needs is imported here; each command imports the rest (the record
# model, fsspec, rich) when it runs, so the help and a mistyped command answer at once.
from ubunye_core.materialisations.staging import DEFAULT_STALE_AFTER
from ubunye_core.paths import is_local
from ubunye_core.records.times import instant
from ubunye_core.records.vocabulary import DEFAULT_FLAG_REASONS, DRIFT_REASONS, RUN_STATUSES
from ubunye_core.store.errors import LineageStoreError, UnreadableRecordWarning
from ubunye_core.wording import counted


@lineage.command("list")
@selected
@click.option(
    "-n",
    "--n",
    "limit",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="How many recent runs.",
)
def list_command(selection: Selection, limit: int) -> None:
    """A task's recent runs, newest first."""
    from ubunye_core.cli.lines import write_json_list

    task_path = selection.task_path()
    entries = islice(selection.store.iter_entries(task_path), limit)
    # The records' documents, as the index holds them: no record is made.
    documents = [entry.document() for entry in entries]
    if selection.as_json:
        write_json_list(documents, write_out)
        sys.stdout.flush()
        return
    from ubunye_core.cli.render import make_console, runs_table

    human = (
        runs_table(task_path, [json.loads(document) for document in documents])
        if documents
        else f"No lineage records for {task_path} in {selection.store.root}."
    )
    make_console().print(human)


@lineage.command("show")
@selected
@run_id_option
def show_command(selection: Selection, run_id: str | None) -> None:
    """One run record as JSON (the latest, or --run-id)."""
    click.echo(latest_record(selection.store, selection.task_path(), run_id).to_json())


@lineage.command("trace")
@selected
@run_id_option
def trace_command(selection: Selection, run_id: str | None) -> None:
    """What a run read, did and wrote.

    Its inputs and outputs with hashes and row counts, the code, the environment, the timings
    and the expectation checks (the latest run, or --run-id).
    """
    from ubunye_core.cli.render import trace_document, trace_tree

    record = latest_document(selection.store, selection.task_path(), run_id)
    selection.print(trace_document(record), trace_tree(record))


@lineage.command("compare")
@selected
@click.option("--run-id1", default=None, help="Run A (default: the newest run's predecessor).")
@click.option("--run-id2", default=None, help="Run B (default: the newest run).")
@click.option(
    "--drift",
    "with_drift",
    is_flag=True,
    help="Add the drift verdict to --json as key 'drift' (the table always shows it).",
)
@click.option(
    "--strict-sources",
    is_flag=True,
    help="Judge assets that read no asset strictly, as build_drift_sensor(strict_sources=True).",
)
@click.option(
    "--flag",
    "flag_reasons",
    multiple=True,
    type=click.Choice(DRIFT_REASONS),
    help="A drift reason that flags (repeat; default: 'same inputs' and 'inputs unknown').",
)
def compare_command(
    selection: Selection,
    run_id1: str | None,
    run_id2: str | None,
    with_drift: bool,
    strict_sources: bool,
    flag_reasons: tuple[str, ...],
) -> None:
    """Two runs side by side, then the drift verdict.

    By default the newest run and the one before it of the same partition: each value changed,
    unchanged, unknown or not comparable, and why; then the drift sensor's verdict on the newer
    run's outputs (unchanged, explained, drift, not judged).
    """
    from ubunye_core.cli.render import make_console
    from ubunye_core.cli.render_compare import compare_table, drift_document, drift_lines
    from ubunye_core.records.compare import compare
    from ubunye_core.records.drift import judge_records

    store = selection.store
    task_path = selection.task_path()
    if bool(run_id1) != bool(run_id2):
        raise CliError(
            "give both --run-id1 and --run-id2, or neither (the newest run and the one before it "
            "of the same partition)"
        )
    if run_id1 and run_id2:
        a, b = store.load(task_path, run_id1), store.load(task_path, run_id2)
    else:
        a, b = latest_pair(store, task_path)
    comparison = compare(a, b)
    previous, current = earlier_first(a, b)
    judgements = judge_records(previous, current, strict_sources=strict_sources)
    flags = flag_reasons or DEFAULT_FLAG_REASONS
    if selection.as_json:
        document = comparison.to_dict()
        if with_drift:
            document["drift"] = drift_document(judgements, previous, current, flags)
        print_json(document)
    else:
        console = make_console()
        console.print(compare_table(comparison))
        console.print(drift_lines(judgements, previous, current, flags))


def _iso_instant(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """``value`` when it is an ISO date or time; else the usage error saying so."""
    if value is not None and instant(value) is None:
        raise click.BadParameter(
            f"{value!r} is not an ISO date or time (like 2026-01-31 or 2026-01-31T12:00:00Z)."
        )
    return value


@lineage.command("search")
@selected
@click.option(
    "--status",
    type=click.Choice(RUN_STATUSES, case_sensitive=False),
    default=None,
    help="Only runs with this status.",
)
@click.option(
    "--since",
    default=None,
    callback=_iso_instant,
    help="Only runs started on or after this ISO date or time (2026-01-31, 2026-01-31T12:00).",
)
def search_command(selection: Selection, status: str | None, since: str | None) -> None:
    """Runs across tasks, newest first.

    Narrowed by -u/-p/-t (or --asset), --status and --since; one line per run, then the count.
    """
    from ubunye_core.cli.lines import write_json_list, write_search_lines
    from ubunye_core.store.queries import RunSearch

    name = selection.task_name()
    if selection.package and not selection.usecase:
        raise CliError("-p needs -u")
    prefix = "/".join(p for p in (selection.usecase, selection.package) if p) or None
    search = RunSearch(prefix, status=status, since=since, task=name)
    entries = selection.store.iter_search(search, with_documents=selection.as_json)
    # Streamed: one run at a time from the index (or the folders) to stdout.
    if selection.as_json:
        write_json_list((entry.document() for entry in entries), write_out)
    else:
        write_search_lines(entries, write_out, color=sys.stdout.isatty())
    sys.stdout.flush()


@lineage.command("reindex")
@with_store_options
@click.option("--full", is_flag=True, help="Delete the index and build it from every record.")
def reindex_command(
    usecase_dir: str, lineage_dir: str, as_json: bool, storage_options: dict[str, Any], full: bool
) -> None:
    """Bring the lineage index up to date with the record files.

    With --full the index is deleted and built anew. Reports the records read and the
    unreadable files skipped.
    """
    from ubunye_core.cli.render import reindex_document, reindex_text

    store = open_store(usecase_dir, lineage_dir, as_json=as_json, storage_options=storage_options)
    report = store.reindex(full=full)
    for _, reason in report.unreadable:
        warnings.warn(
            f"skipped an unreadable lineage record: {reason}", UnreadableRecordWarning, stacklevel=2
        )
    if as_json:
        print_json(reindex_document(report))
    else:
        click.echo(reindex_text(report, store.root))


@lineage.command("diff")
@selected
@click.argument("paths", nargs=-1, metavar="[PATH_A PATH_B]")
@click.option("--run-id1", default=None, help="Run A (default: the newest run's predecessor).")
@click.option("--run-id2", default=None, help="Run B (default: the newest run).")
@click.option("--output", "output", default=None, help="The output to compare (when several).")
@click.option("--key", default=None, help="Key columns 'a,b': report rows changed by key.")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Rows shown of each kind.",
)
def diff_command(
    selection: Selection,
    paths: tuple[str, ...],
    run_id1: str | None,
    run_id2: str | None,
    output: str | None,
    key: str | None,
    limit: int,
) -> int:
    """Which rows changed between two runs of an asset.

    Or between two stored paths PATH_A PATH_B (PATH@vN: a Delta table's version N): rows
    removed and added, or with --key rows changed. Exit 0 equal, 1 different, 2 trouble.
    """
    from ubunye_core.diff.report import (
        ReportError,
        diff_versions,
        output_step,
        path_version,
        recorded_version,
    )

    try:
        if paths and len(paths) != 2:
            raise CliError("give two stored paths PATH_A PATH_B, or an asset's runs")
        if paths:
            before, after = path_version(paths[0]), path_version(paths[1])
        else:
            a, b = two_runs(selection, run_id1, run_id2)
            pair = earlier_first(a, b)
            before, after = (recorded_version(r, output_step(r, output)) for r in pair)
        columns = [name.strip() for name in key.split(",") if name.strip()] if key else None
        report = diff_versions(
            before, after, key=columns, storage_options=selection.storage_options
        )
    except (CliError, ReportError, LineageStoreError, ValueError, OSError) as exc:
        raise DiffTrouble(str(exc)) from exc
    selection.print(report.to_dict(limit), "\n".join(report.lines(limit)))
    return 0 if report.equal else 1


@lineage.command("digest")
@selected
@click.option("--output", "output", default=None, help="The output to combine (when several).")
def digest_command(selection: Selection, output: str | None) -> None:
    """The rows-v1 digest of a whole (partitioned) asset.

    The newest successful run of each partition, combined from the run records alone.
    """
    from ubunye_core.diff.report import asset_digest, latest_partition_digests

    task_path = selection.task_path()
    parts = latest_partition_digests(selection.store, task_path, output)
    fp = asset_digest(parts)
    used = [
        {"partition": p.partition, "run_id": p.run_id, "data_hash": p.fingerprint.data_hash,
         "row_count": p.fingerprint.row_count}
        for p in parts
    ]  # fmt: skip
    document = {
        "task_path": task_path,
        "data_hash": fp.data_hash,
        "schema_hash": fp.schema_hash,
        "row_count": fp.row_count,
        "hash_method": fp.method,
        "partitions": used,
    }
    lines = [
        f"Digest of {task_path}: {counted(len(parts), 'partition')}",
        f"data   : {fp.data_hash}",
        f"schema : {fp.schema_hash}",
        f"rows   : {fp.row_count}",
        "from   :",
        *(
            f"  {p['partition'] or '(unpartitioned)'}  run {p['run_id']}  {_rows(p['row_count'])}"
            for p in used
        ),
    ]
    selection.print(document, "\n".join(lines))


def _rows(count: int | None) -> str:
    return counted(count, "row") if count is not None else "rows not recorded"


@cli.command("clean")
@click.argument("base_path")
@click.option(
    "--older-than",
    "older_than_hours",
    type=click.FloatRange(min=0),
    default=DEFAULT_STALE_AFTER / 3600,
    show_default=True,
    help="Hours after which another host's staging entry counts as left by a dead writer.",
)
@click.option("--dry-run", is_flag=True, help="List what would be removed; remove nothing.")
@storage_options_option
def clean_command(
    base_path: str, older_than_hours: float, dry_run: bool, storage_options: dict[str, Any]
) -> None:
    """Remove what killed writers staged under BASE_PATH.

    BASE_PATH is the IO manager's base_path: a folder or an fsspec URL. Writes are staged
    beside their targets under names starting .ubunye-tmp-; a live writer's entry is never
    touched: on this host its process is asked; from another host, only entries older than
    --older-than count as dead.
    """
    from upath import UPath

    from ubunye_core.materialisations.staging import dead_staging_entries, remove_dead_staging

    try:
        root = UPath(base_path, **storage_options)
    except (TypeError, ValueError) as exc:
        raise CliError(f"cannot open {base_path} with --storage-options: {exc}") from exc
    existing_folder(root, "the base path")
    native = str(root.absolute()) if is_local(root) else root.path
    stale_after = older_than_hours * 3600
    if dry_run:
        found = list(dead_staging_entries(root.fs, native, stale_after=stale_after, recursive=True))
    else:
        found = remove_dead_staging(root.fs, native, stale_after=stale_after, recursive=True)
    for path in found:
        click.echo(path)
    verb = "would remove" if dry_run else "removed"
    entries = counted(len(found), "staging entry", "staging entries")
    click.echo(f"{verb} {entries} left by dead writers")
