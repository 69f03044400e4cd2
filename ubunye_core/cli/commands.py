"""``ubunye-dagster lineage list|show|trace|compare|search|reindex``: the run records of a use
case; ``ubunye-dagster clean``: remove what killed writers staged beside the data.

Flags are the reference CLI's (``-d/--usecase-dir -u -p -t --run-id --run-id1 --run-id2
--lineage-dir --json``), so the same command line works with ``ubunye lineage``. ``--asset a/b``
finds a Dagster asset's task folder instead of ``-t``. Every failure is one ``error:`` line on
stderr and exit code 1 (2 for a wrong command line, whose line says how to get help); with
``--json`` stdout also gets ``{"ok": false, "error": ...}``. The help text is click's, so the
commands' docstrings are plain text whose first sentence is short enough to be listed whole.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any, TypeVar

import click

# Only what every command line needs is imported here; each command imports the rest (the record
# model, fsspec, rich) when it runs, so the help and a mistyped command answer at once.
from ubunye_core.materialisations.staging import DEFAULT_STALE_AFTER
from ubunye_core.paths import is_local
from ubunye_core.records.times import instant
from ubunye_core.records.vocabulary import DEFAULT_FLAG_REASONS, DRIFT_REASONS, RUN_STATUSES
from ubunye_core.storage_options import STORAGE_OPTIONS_ENV, storage_options_from_json
from ubunye_core.store.errors import LineageStoreError, UnreadableRecordWarning
from ubunye_core.store.names import LINEAGE_SUBDIR, task_name_for_key
from ubunye_core.wording import counted

if TYPE_CHECKING:
    from pathlib import Path

    from upath import UPath

    from ubunye_core.records.model import RunRecord
    from ubunye_core.store import LineageStore

_Path = TypeVar("_Path", "Path", "UPath")

DEFAULT_LINEAGE_DIR = "/".join(LINEAGE_SUBDIR)


class CliError(Exception):
    """A problem to report as one line, without a traceback."""

    exit_code = 1


class DiffTrouble(CliError):
    """A diff that could not be made: exit 2, as ``diff`` does (1 means different)."""

    exit_code = 2


def _print_json(document: Any) -> None:
    click.echo(json.dumps(document, indent=2, ensure_ascii=False, default=str))


def _reason(exc: BaseException) -> str:
    return f"{exc} ({type(exc).__name__})" if str(exc) else type(exc).__name__


def _existing_folder(path: _Path, what: str) -> _Path:
    """``path`` when it is a folder (on an object store: a prefix holding objects); else a
    CliError saying that ``what`` does not exist, is not a folder, or cannot be read and why."""
    try:
        if path.is_dir():
            return path
        exists = path.exists()
    except Exception as exc:  # whatever the store's client raises: credentials, endpoint, access
        raise CliError(f"cannot read {what} {path}: {_reason(exc)}") from exc
    raise CliError(f"{what} {path} {'is a file, not a folder' if exists else 'does not exist'}")


def _open_store(
    usecase_dir: str,
    lineage_dir: str,
    *,
    use_index: bool = True,
    as_json: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> LineageStore:
    """The store at ``--lineage-dir`` (a URL, an absolute path, or a path under ``-d``, opened
    with ``--storage-options``), with a progress bar on a terminal for long index work (never
    with --json). The folder named must exist: ``--lineage-dir`` when it is a URL or absolute,
    else ``-d`` (whose records folder may not be made yet)."""
    from ubunye_core.store import LineageStore

    if "://" in lineage_dir or os.path.isabs(lineage_dir):
        root = _existing_folder(_location(lineage_dir, storage_options), "the lineage folder")
    else:
        usecase = _location(usecase_dir, storage_options)
        root = _existing_folder(usecase, "the use case folder") / lineage_dir
    progress = None
    if not as_json and sys.stderr.isatty():
        from ubunye_core.cli.progress import TerminalProgress

        progress = TerminalProgress()
    return LineageStore(root, use_index=use_index, progress=progress)


def _location(text: str, storage_options: dict[str, Any] | None) -> Path | UPath:
    """``text`` as a path to open: plain local ones without fsspec, URLs with the options."""
    from ubunye_core.store.layout import as_path, plain_local_path

    if not storage_options or plain_local_path(text) is not None:
        return as_path(text)
    from upath import UPath

    return UPath(text, **storage_options)


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


def _latest_document(store: LineageStore, task_path: str, run_id: str | None) -> dict[str, Any]:
    """The run's record as its document (``RunRecord.to_dict``'s): the newest run's as the
    listing holds it, so no record model is built (unless it lacks a field), or ``run_id``'s."""
    from ubunye_core.cli.render import holds_every_traced_field

    if run_id:
        return _latest(store, task_path, run_id).to_dict()
    newest = next(store.iter_entries(task_path), None)
    if newest is None:
        raise CliError(f"no lineage records for task {task_path} in {store.root}")
    document = json.loads(newest.document())
    return document if holds_every_traced_field(document) else newest.record().to_dict()


def earlier_first(a: RunRecord, b: RunRecord) -> tuple[RunRecord, RunRecord]:
    """The two runs as (previous, current) by ``started_at``; ``a`` first on a tie or when a
    time cannot be read."""
    started_a, started_b = instant(a.started_at), instant(b.started_at)
    if started_a is not None and started_b is not None and started_b < started_a:
        return b, a
    return a, b


@dataclass(frozen=True)
class Selection:
    """What the common options name: the store (-d, --lineage-dir, --no-index), the task
    (-u -p -t or --asset) and --json."""

    usecase_dir: str
    lineage_dir: str
    use_index: bool
    usecase: str | None
    package: str | None
    task: str | None
    asset: str | None
    as_json: bool
    storage_options: dict[str, Any]

    @functools.cached_property
    def store(self) -> LineageStore:
        """The store, opened when first asked for (a CliError when its folder is missing), so
        a command reports that as it reports its other failures."""
        return _open_store(
            self.usecase_dir,
            self.lineage_dir,
            use_index=self.use_index,
            as_json=self.as_json,
            storage_options=self.storage_options,
        )

    def task_path(self) -> str:
        """The one ``usecase/package/task`` the options name (CliError when they do not)."""
        return resolve_task(self.store, self.usecase, self.package, self.task, self.asset)

    def task_name(self) -> str | None:
        """The task folder name given by -t or --asset, if any (search takes a partial path)."""
        if self.asset is not None and self.task is not None:
            raise CliError("give -t/--task or --asset, not both")
        return task_name_for_key(_asset_parts(self.asset)) if self.asset is not None else self.task

    def print(self, document: Any, human: Any) -> None:
        """``document`` as JSON with --json, else ``human`` (a rich renderable or text)."""
        if self.as_json:
            _print_json(document)
        else:
            from ubunye_core.cli.render import make_console

            make_console().print(human)


def _json_object(_ctx: click.Context, param: click.Parameter, value: str | None) -> dict[str, Any]:
    """``value`` read as a JSON object; else the usage error saying why it is not one."""
    try:
        return storage_options_from_json(value, f"--{param.name.replace('_', '-')}")
    except ValueError as exc:
        raise click.BadParameter(f"{exc}.") from exc


_storage_options_option = click.option(
    "--storage-options",
    default=None,
    envvar=STORAGE_OPTIONS_ENV,
    callback=_json_object,
    help="fsspec options of the store as JSON, e.g. "
    '\'{"client_kwargs": {"endpoint_url": "..."}}\' (default: $' + STORAGE_OPTIONS_ENV + ").",
)

_STORE_OPTIONS = [
    click.option("-d", "--usecase-dir", default=".", show_default=True, help="Use case folder."),
    click.option(
        "--lineage-dir",
        default=DEFAULT_LINEAGE_DIR,
        show_default=True,
        help="Records folder, under -d unless absolute or a URL (s3://..., memory://...).",
    ),
    click.option("--json", "as_json", is_flag=True, help="Print one JSON document."),
    _storage_options_option,
]

_SELECTION_OPTIONS = [
    *_STORE_OPTIONS,
    click.option(
        "--no-index",
        "no_index",
        is_flag=True,
        help="Read the record files directly instead of through the index (same answers).",
    ),
    click.option("-u", "--usecase", default=None, help="Use case."),
    click.option("-p", "--package", default=None, help="Package (Dagster: asset group)."),
    click.option("-t", "--task", default=None, help="Task (Dagster: encoded asset key)."),
    click.option("--asset", default=None, help="A Dagster asset key 'a/b' instead of -t."),
]

_run_id_option = click.option(
    "--run-id", default=None, help="A run id or a unique prefix (default: latest)."
)


def _selected(func: Callable[..., Any]) -> Callable[..., Any]:
    """Give a command the reference's common options, passed to it as one ``Selection``."""

    @functools.wraps(func)
    def command(
        usecase_dir: str,
        lineage_dir: str,
        as_json: bool,
        no_index: bool,
        usecase: str | None,
        package: str | None,
        task: str | None,
        asset: str | None,
        storage_options: dict[str, Any],
        **options: Any,
    ) -> Any:
        selection = Selection(
            usecase_dir,
            lineage_dir,
            not no_index,
            usecase,
            package,
            task,
            asset,
            as_json,
            storage_options,
        )
        return func(selection, **options)

    for option in reversed(_SELECTION_OPTIONS):
        command = option(command)
    return command


class BareGroupPrintsHelp(click.Group):
    """A command group that, run with no arguments, prints its help on stderr and exits 2.

    The one place the CLI meets a click version difference: click 8.2 raises
    ``NoArgsIsHelpError`` for a bare group, click 8.1 (which Dagster 1.10 requires) prints the
    help on stdout and exits 0. Deciding it here gives the same answer on both.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Print the help and exit 2 when ``args`` is empty; else parse as click does."""
        if not args and not ctx.resilient_parsing:
            # A bare group is a request for its help, not a mistake worth an error line.
            click.echo(ctx.get_help(), err=True)
            ctx.exit(2)
        return super().parse_args(ctx, args)


#: The distributions ``--version`` names, in the order it prints them.
VERSIONED = ("ubunye-dagster", "ubunye-rows")


def installed_versions() -> str:
    """One line per distribution of this project: its name and installed version."""
    from importlib.metadata import PackageNotFoundError, version

    lines = []
    for name in VERSIONED:
        try:
            lines.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            lines.append(f"{name} (not installed)")
    return "\n".join(lines)


def _print_versions(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(installed_versions())
        ctx.exit()


@click.group(cls=BareGroupPrintsHelp, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_versions,
    help="Print the versions of ubunye-dagster and ubunye-rows, then exit.",
)
def cli() -> None:
    """ubunye-dagster: receipts of Dagster asset materialisations (Ubunye ADR 006)."""


@cli.group(cls=BareGroupPrintsHelp)
def lineage() -> None:
    """Inspect run records under <usecase-dir>/.ubunye/lineage."""


@lineage.command("list")
@_selected
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
        write_json_list(documents, _write_out)
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
@_selected
@_run_id_option
def show_command(selection: Selection, run_id: str | None) -> None:
    """One run record as JSON (the latest, or --run-id)."""
    click.echo(_latest(selection.store, selection.task_path(), run_id).to_json())


@lineage.command("trace")
@_selected
@_run_id_option
def trace_command(selection: Selection, run_id: str | None) -> None:
    """What a run read, did and wrote.

    Its inputs and outputs with hashes and row counts, the code, the environment, the timings
    and the expectation checks (the latest run, or --run-id).
    """
    from ubunye_core.cli.render import trace_document, trace_tree

    record = _latest_document(selection.store, selection.task_path(), run_id)
    selection.print(trace_document(record), trace_tree(record))


def latest_pair(store: LineageStore, task_path: str) -> tuple[RunRecord, RunRecord]:
    """(previous, newest): the newest run of the task and the run before it of the same
    partition, so a partition is only ever compared with itself."""
    runs = store.iter_runs(task_path, same_partition_as_newest=True)
    newest = next(runs, None)
    if newest is None:
        raise CliError(f"compare needs two runs; {task_path} has none in {store.root}")
    partition = newest.partition_key
    # Lazy: reading stops at the first older run of the same partition.
    for record in runs:
        return record, newest
    which = f"run of partition {partition!r}" if partition is not None else "unpartitioned run"
    raise CliError(
        f"compare needs two runs of the same partition; the newest run {newest.run_id} of "
        f"{task_path} is its only {which} in {store.root} (name two with --run-id1/--run-id2)"
    )


@lineage.command("compare")
@_selected
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
        _print_json(document)
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
@_selected
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

    name = selection.task_name()
    if selection.package and not selection.usecase:
        raise CliError("-p needs -u")
    prefix = "/".join(p for p in (selection.usecase, selection.package) if p) or None
    entries = selection.store.iter_search(
        prefix, status=status, since=since, task=name, with_documents=selection.as_json
    )
    # Streamed: one run at a time from the index (or the folders) to stdout.
    if selection.as_json:
        write_json_list((entry.document() for entry in entries), _write_out)
    else:
        write_search_lines(entries, _write_out, color=sys.stdout.isatty())
    sys.stdout.flush()


def _write_out(text: str) -> None:
    """Write ``text`` to stdout as it is, through its buffer (a terminal's is flushed at each
    line; ``click.echo`` would flush every write, a system call per run listed)."""
    sys.stdout.write(text)


def _with_store_options(func: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(_STORE_OPTIONS):
        func = option(func)
    return func


@lineage.command("reindex")
@_with_store_options
@click.option("--full", is_flag=True, help="Delete the index and build it from every record.")
def reindex_command(
    usecase_dir: str, lineage_dir: str, as_json: bool, storage_options: dict[str, Any], full: bool
) -> None:
    """Bring the lineage index up to date with the record files.

    With --full the index is deleted and built anew. Reports the records read and the
    unreadable files skipped.
    """
    from ubunye_core.cli.render import reindex_document, reindex_text

    store = _open_store(usecase_dir, lineage_dir, as_json=as_json, storage_options=storage_options)
    report = store.reindex(full=full)
    for _, reason in report.unreadable:
        warnings.warn(
            f"skipped an unreadable lineage record: {reason}", UnreadableRecordWarning, stacklevel=2
        )
    if as_json:
        _print_json(reindex_document(report))
    else:
        click.echo(reindex_text(report, store.root))


@lineage.command("diff")
@_selected
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
            a, b = _two_runs(selection, run_id1, run_id2)
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
@_selected
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


def _two_runs(
    selection: Selection, run_id1: str | None, run_id2: str | None
) -> tuple[RunRecord, RunRecord]:
    """Runs A and B named by --run-id1/--run-id2, or the newest and its predecessor."""
    task_path = selection.task_path()
    if bool(run_id1) != bool(run_id2):
        raise CliError("give both --run-id1 and --run-id2, or neither")
    if run_id1 and run_id2:
        return selection.store.load(task_path, run_id1), selection.store.load(task_path, run_id2)
    return latest_pair(selection.store, task_path)


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
@_storage_options_option
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
    _existing_folder(root, "the base path")
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


def _help_hint(ctx: click.Context | None) -> str:
    """Where the help of the command a usage error was made on is (click's own wording)."""
    return f"Try '{ctx.command_path if ctx else 'ubunye-dagster'} --help' for help."


def _fail(message: str, as_json: bool, code: int = 1, hint: str = "") -> int:
    first_line = " ".join(message.split("\n")[0].split()) or "failed"
    if hint:
        # click 8.1 ends some messages without a full stop ("No such option: --x").
        first_line += ("" if first_line.endswith((".", "?", "!")) else ".") + f" {hint}"
    if as_json:
        _print_json({"ok": False, "error": first_line})
    click.echo(f"error: {first_line}", err=True)
    return code


def _reported_errors() -> tuple[type[BaseException], ...]:
    """The errors reported as their one line: the diff's own only once its module is loaded
    (before that, nothing raised it)."""
    found: list[type[BaseException]] = [CliError, LineageStoreError, ValueError, OSError]
    report = sys.modules.get("ubunye_core.diff.report")
    if report is not None:
        found.append(report.ReportError)
    return tuple(found)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 failure, 2 wrong command line)."""
    if argv is None:
        # Run as a program: pydantic's plugin discovery scans every installed distribution's
        # entry points before the first record model is built, a tenth of a quick command's
        # time, and no validation plugin has anything to observe in a command line's process.
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnreadableRecordWarning)
        try:
            result = cli.main(args, prog_name="ubunye-dagster", standalone_mode=False)
            code = result if isinstance(result, int) else 0
        except click.exceptions.Exit as exc:
            code = exc.exit_code
        except click.exceptions.Abort:
            code = _fail("aborted", as_json)
        except click.UsageError as exc:
            code = _fail(exc.format_message(), as_json, exc.exit_code, _help_hint(exc.ctx))
        except click.ClickException as exc:
            code = _fail(exc.format_message(), as_json, exc.exit_code)
        except Exception as exc:
            reported = isinstance(exc, _reported_errors())
            if not reported and os.environ.get("UBUNYE_DAGSTER_DEBUG"):
                raise
            code = (
                _fail(str(exc), as_json, getattr(exc, "exit_code", 1))
                if reported
                else _fail(f"unexpected {type(exc).__name__}: {exc}", as_json)
            )
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
