"""Reading run records: one file, one run by its id or a prefix of it, and many files at once
(an object store's in batches). A file that is not a readable run record is an
``UnreadableRecordError`` naming it; listings skip it with an ``UnreadableRecordWarning``."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from contextlib import suppress
from os import PathLike
from typing import TYPE_CHECKING

from ubunye_core.paths import is_local
from ubunye_core.store.errors import (
    AmbiguousRunIdError,
    LineageStoreError,
    RecordNotFoundError,
    UnreadableRecordError,
    UnreadableRecordWarning,
)
from ubunye_core.store.layout import RECORD_SUFFIX, StoreLayout, as_path
from ubunye_core.store.listing import FileEntry
from ubunye_core.store.names import check_segment
from ubunye_core.wording import counted

if TYPE_CHECKING:
    from upath import UPath

    from ubunye_core.records.model import RunRecord

#: Record files an object store is asked for in one request.
_REMOTE_BATCH = 256
#: Run ids a "no such run" error lists, when the task has no more runs than this.
_RUNS_NAMED = 5


class RecordReader(StoreLayout):
    """Reads the store's record files."""

    def read(self, path: str | PathLike[str] | UPath) -> RunRecord:
        """The record in one file; UnreadableRecordError naming the file when it is not one."""
        target = as_path(path)
        try:
            data = target.read_bytes()
        except FileNotFoundError as exc:
            raise RecordNotFoundError(f"no record file at {target}") from exc
        except OSError as exc:
            raise UnreadableRecordError(f"cannot read lineage record {target}: {exc}") from exc
        return parse_record(target, data)

    def load(self, task_path: str, run_id_or_prefix: str) -> RunRecord:
        """One run of a task, by its run id or a prefix of it that fits exactly one run."""
        prefix = check_segment(run_id_or_prefix, "run id")
        folder = self.task_dir(task_path)
        # A whole run id is one read; only a prefix needs the folder listing.
        with suppress(RecordNotFoundError):
            return self.read(folder / (prefix + RECORD_SUFFIX))
        run_ids = sorted(
            entry.name[: -len(RECORD_SUFFIX)] for entry in self._record_entries(folder)
        )
        fits = [run_id for run_id in run_ids if run_id.startswith(prefix)]
        if len(fits) > 1:
            shown = ", ".join(fits[:10]) + (", ..." if len(fits) > 10 else "")
            raise AmbiguousRunIdError(
                f"run id {prefix!r} fits {len(fits)} runs of {task_path}: {shown}; "
                f"give more characters"
            )
        if not fits:
            raise RecordNotFoundError(
                f"no run {prefix!r} of task {task_path} in {self._root} ({_runs_held(run_ids)})"
            )
        return self.read(folder / (fits[0] + RECORD_SUFFIX))

    def _read_entries(
        self, task_path: str, entries: list[FileEntry]
    ) -> Iterator[tuple[FileEntry, RunRecord | None, str | None]]:
        """Each file's record, or None and why it is unreadable; object stores in batches."""
        folder = self._task_folder(task_path)
        if isinstance(folder, str) or is_local(folder):
            for entry in entries:
                try:
                    yield entry, self.read(_joined(folder, entry.name)), None
                except RecordNotFoundError:
                    continue
                except LineageStoreError as exc:
                    yield entry, None, str(exc)
            return
        for start in range(0, len(entries), _REMOTE_BATCH):
            batch = entries[start : start + _REMOTE_BATCH]
            paths = [(folder / entry.name) for entry in batch]
            found = folder.fs.cat([p.path for p in paths], on_error="return")
            for entry, path in zip(batch, paths, strict=True):
                data = found.get(path.path, FileNotFoundError(path.path))
                if isinstance(data, FileNotFoundError):
                    continue
                try:
                    if isinstance(data, Exception):
                        raise UnreadableRecordError(f"cannot read lineage record {path}: {data}")
                    yield entry, parse_record(path, data), None
                except LineageStoreError as exc:
                    yield entry, None, str(exc)

    def _read_or_warn(self, path: UPath) -> RunRecord | None:
        try:
            return self.read(path)
        except LineageStoreError as exc:
            warn_unreadable(str(exc))
            return None


def _joined(folder: str | UPath, name: str) -> str | UPath:
    return os.path.join(folder, name) if isinstance(folder, str) else folder / name


def _runs_held(run_ids: list[str]) -> str:
    """What a task folder holds, said when the run asked for is not among ``run_ids``."""
    if not run_ids:
        return "it has no records"
    held = counted(len(run_ids), "run")
    if len(run_ids) > _RUNS_NAMED:
        return f"it has {held}, none with that id or prefix"
    return f"it has {held}: {', '.join(run_ids)}"


def parse_record(target: UPath, data: bytes) -> RunRecord:
    from ubunye_core.records.model import RunRecord

    try:
        return RunRecord.from_json(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UnreadableRecordError(f"cannot read lineage record {target}: {exc}") from exc
    except ValueError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UnreadableRecordError(f"{target} is not a valid run record: {reason}") from exc


def warn_unreadable(reason: str) -> None:
    warnings.warn(
        f"skipped an unreadable lineage record: {reason}", UnreadableRecordWarning, stacklevel=5
    )
