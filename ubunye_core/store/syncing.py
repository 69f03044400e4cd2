"""Keeping the index in step with the record files: the folders a question touches are synced
before it is answered, ``reindex`` syncs them all. The files stay the truth; a damaged index is
deleted and built again."""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass

from ubunye_core.store.errors import LineageStoreError
from ubunye_core.store.index import (
    IndexUnavailable,
    RecordIndex,
    SyncReport,
    is_damage,
)
from ubunye_core.store.reading import RecordReader


@dataclass(frozen=True)
class ReindexReport:
    """What ``reindex`` did: where the index is, files read now, files already indexed, rows
    of vanished files dropped, unreadable files (path, reason) and the seconds it took."""

    index: str
    read: int
    unchanged: int
    removed: int
    unreadable: list[tuple[str, str]]
    seconds: float


class IndexedStore(RecordReader):
    """Syncs the index from the record files it reads."""

    def reindex(self, *, full: bool = False) -> ReindexReport:
        """Bring the index up to date with every record file (``full``: build it anew)."""
        if not self.use_index:
            raise LineageStoreError("this store was opened without its index")
        if self._local_root is not None and not os.path.isdir(self._local_root):
            raise LineageStoreError(f"no lineage records folder at {self._root}")
        started = time.perf_counter()
        index = self._index()
        if full:
            index.discard()
        task_paths = self.task_paths()
        try:
            report = self._sync(index, task_paths)
            removed = report.removed + index.drop_other_tasks(task_paths)
        except (IndexUnavailable, sqlite3.Error) as exc:
            raise LineageStoreError(f"cannot build the index {index.path}: {exc}") from exc
        return ReindexReport(
            index=str(index.path),
            read=report.read,
            unchanged=report.unchanged,
            removed=removed,
            unreadable=list(report.unreadable),
            seconds=time.perf_counter() - started,
        )

    def _synced_index(self, task_paths: list[str], whole_store: bool) -> RecordIndex | None:
        """The index, up to date for ``task_paths``; None when it is off or cannot be used here
        (the folders are read instead). A damaged index is deleted and built again once."""
        if not self.use_index:
            return None
        if self._local_root is not None and not os.path.isdir(self._local_root):
            return None
        index = self._index()
        for attempt in range(2):
            try:
                self._sync(index, task_paths)
                if whole_store:
                    index.drop_other_tasks(task_paths)
                return index
            except IndexUnavailable:
                return None
            except sqlite3.Error as exc:
                # Busy past the timeout, a full disk: read the folders this time. Damage: once
                # more with a new index.
                if not is_damage(exc) or attempt == 1:
                    return None
                index.discard()
        return None

    def _sync(self, index: RecordIndex, task_paths: list[str]) -> SyncReport:
        folders = (self._folder_state(task_path) for task_path in task_paths)
        return index.sync(
            folders, self._read_entries, still_gone=self._still_gone, progress=self.progress
        )

    def _still_gone(self, task_path: str, file_name: str) -> bool:
        """A file missing from a listing is still missing (a local check is cheap)."""
        folder = self._task_folder(task_path)
        if not isinstance(folder, str):
            return True
        return not os.path.exists(os.path.join(folder, file_name))
