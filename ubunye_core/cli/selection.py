"""What a command works on: the lineage store (``-d/--usecase-dir``, ``--lineage-dir``, storage
options) and the task and runs in it (``-u -p -t``, or ``--asset a/b``; ``--run-id``), with the
options that select them."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ubunye_core.records.times import instant
from ubunye_core.storage_options import STORAGE_OPTIONS_ENV, storage_options_from_json
from ubunye_core.store.names import LINEAGE_SUBDIR, task_name_for_key

if TYPE_CHECKING:
    from pathlib import Path

    from upath import UPath

    from ubunye_core.records.model import RunRecord
    from ubunye_core.store import LineageStore
from ubunye_core.cli.app import CliError, print_json, reason

_Path = TypeVar("_Path", "Path", "UPath")


DEFAULT_LINEAGE_DIR = "/".join(LINEAGE_SUBDIR)


def existing_folder(path: _Path, what: str) -> _Path:
    """``path`` when it is a folder (on an object store: a prefix holding objects); else a
    CliError saying that ``what`` does not exist, is not a folder, or cannot be read and why."""
    try:
        if path.is_dir():
            return path
        exists = path.exists()
    except Exception as exc:  # whatever the store's client raises: credentials, endpoint, access
        raise CliError(f"cannot read {what} {path}: {reason(exc)}") from exc
    raise CliError(f"{what} {path} {'is a file, not a folder' if exists else 'does not exist'}")


def open_store(
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
        root = existing_folder(location_of(lineage_dir, storage_options), "the lineage folder")
    else:
        usecase = location_of(usecase_dir, storage_options)
        root = existing_folder(usecase, "the use case folder") / lineage_dir
    progress = None
    if not as_json and sys.stderr.isatty():
        from ubunye_core.cli.progress import TerminalProgress

        progress = TerminalProgress()
    return LineageStore(root, use_index=use_index, progress=progress)


def location_of(text: str, storage_options: dict[str, Any] | None) -> Path | UPath:
    """``text`` as a path to open: plain local ones without fsspec, URLs with the options."""
    from ubunye_core.store.layout import as_path, plain_local_path

    if not storage_options or plain_local_path(text) is not None:
        return as_path(text)
    from upath import UPath

    return UPath(text, **storage_options)


def asset_parts(asset: str) -> list[str]:
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
        name = task_name_for_key(asset_parts(asset))
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


def latest_record(store: LineageStore, task_path: str, run_id: str | None) -> RunRecord:
    if run_id:
        return store.load(task_path, run_id)
    record = store.latest(task_path)
    if record is None:
        raise CliError(f"no lineage records for task {task_path} in {store.root}")
    return record


def latest_document(store: LineageStore, task_path: str, run_id: str | None) -> dict[str, Any]:
    """The run's record as its document (``RunRecord.to_dict``'s): the newest run's as the
    listing holds it, so no record model is built (unless it lacks a field), or ``run_id``'s."""
    from ubunye_core.cli.render import holds_every_traced_field

    if run_id:
        return latest_record(store, task_path, run_id).to_dict()
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
        return open_store(
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
        return task_name_for_key(asset_parts(self.asset)) if self.asset is not None else self.task

    def print(self, document: Any, human: Any) -> None:
        """``document`` as JSON with --json, else ``human`` (a rich renderable or text)."""
        if self.as_json:
            print_json(document)
        else:
            from ubunye_core.cli.render import make_console

            make_console().print(human)


def json_object(_ctx: click.Context, param: click.Parameter, value: str | None) -> dict[str, Any]:
    """``value`` read as a JSON object; else the usage error saying why it is not one."""
    try:
        return storage_options_from_json(value, f"--{param.name.replace('_', '-')}")
    except ValueError as exc:
        raise click.BadParameter(f"{exc}.") from exc


storage_options_option = click.option(
    "--storage-options",
    default=None,
    envvar=STORAGE_OPTIONS_ENV,
    callback=json_object,
    help="fsspec options of the store as JSON, e.g. "
    '\'{"client_kwargs": {"endpoint_url": "..."}}\' (default: $' + STORAGE_OPTIONS_ENV + ").",
)


STORE_OPTIONS = [
    click.option("-d", "--usecase-dir", default=".", show_default=True, help="Use case folder."),
    click.option(
        "--lineage-dir",
        default=DEFAULT_LINEAGE_DIR,
        show_default=True,
        help="Records folder, under -d unless absolute or a URL (s3://..., memory://...).",
    ),
    click.option("--json", "as_json", is_flag=True, help="Print one JSON document."),
    storage_options_option,
]


SELECTION_OPTIONS = [
    *STORE_OPTIONS,
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


run_id_option = click.option(
    "--run-id", default=None, help="A run id or a unique prefix (default: latest)."
)


def selected(func: Callable[..., Any]) -> Callable[..., Any]:
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

    for option in reversed(SELECTION_OPTIONS):
        command = option(command)
    return command


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


def with_store_options(func: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(STORE_OPTIONS):
        func = option(func)
    return func


def two_runs(
    selection: Selection, run_id1: str | None, run_id2: str | None
) -> tuple[RunRecord, RunRecord]:
    """Runs A and B named by --run-id1/--run-id2, or the newest and its predecessor."""
    task_path = selection.task_path()
    if bool(run_id1) != bool(run_id2):
        raise CliError("give both --run-id1 and --run-id2, or neither")
    if run_id1 and run_id2:
        return selection.store.load(task_path, run_id1), selection.store.load(task_path, run_id2)
    return latest_pair(selection.store, task_path)
