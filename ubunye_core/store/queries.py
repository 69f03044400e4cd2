"""Listings and searches of runs, newest first.

They answer from the index (``ubunye_core.store.index``), brought up to date from the folders
they touch before each answer; ``use_index=False`` reads the files instead, with the same answers
in the same order (``ubunye_core.store.listing`` defines it).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, datetime
from itertools import groupby, islice
from typing import TYPE_CHECKING, Any

from ubunye_core.records.times import instant
from ubunye_core.store.errors import LineageStoreError
from ubunye_core.store.index import RecordIndex, is_damage
from ubunye_core.store.listing import RunEntry, epoch_micros, order_key, started_order
from ubunye_core.store.names import split_task_path
from ubunye_core.store.reading import warn_unreadable
from ubunye_core.store.syncing import IndexedStore

if TYPE_CHECKING:
    from ubunye_core.records.model import RunRecord


@dataclass(frozen=True)
class RunSearch:
    """What a search asks for: runs under ``task_path`` (``usecase``, ``usecase/package``, a
    whole task path, or None for all), of task folders named ``task`` when given, with that
    ``status``, started on or after ``since``."""

    task_path: str | None = None
    status: str | None = None
    since: str | date | datetime | None = None
    task: str | None = None

    def since_micros(self) -> int | None:
        """``since`` in microseconds since the epoch (None when not given); a ValueError when it
        is no ISO date or time."""
        if self.since is None:
            return None
        since_at = instant(self.since)
        if since_at is None:
            raise ValueError(f"since must be an ISO date or time, not {self.since!r}")
        return epoch_micros(since_at)


class RunQueries(IndexedStore):
    """A task's runs and searches over the store."""

    def iter_runs(
        self, task_path: str, *, same_partition_as_newest: bool = False
    ) -> Iterator[RunRecord]:
        """A task's runs, newest first, each record made only when the iteration reaches it;
        with ``same_partition_as_newest`` only the newest and the older runs of its partition."""
        task_paths = ["/".join(split_task_path(task_path))]
        return self._iter_runs(task_paths, same_partition_as_newest)

    def _iter_runs(self, task_paths: list[str], same_partition: bool) -> Iterator[RunRecord]:
        index = self._synced_index(task_paths, whole_store=False)
        warned: set[str] = set()

        def warn_once(reason: str) -> None:
            # The second query below meets the unreadable files the first one did.
            if reason not in warned:
                warned.add(reason)
                warn_unreadable(reason)

        entries = self._query(index, task_paths, on_unreadable=warn_once)
        if not same_partition:
            yield from (entry.record() for entry in entries)
            return
        newest = next(entries, None)
        if newest is None:
            return
        record = newest.record()
        yield record
        partition = record.partition_key
        if index is None:
            # Reading the folders: go on with the same lazy pass.
            older = (entry.record() for entry in entries)
            yield from (r for r in older if r.partition_key == partition)
            return
        entries.close()
        # The first run of the partition is the newest itself.
        older_entries = self._query(index, task_paths, partition=partition, on_unreadable=warn_once)
        yield from (entry.record() for entry in islice(older_entries, 1, None))

    def iter_entries(self, task_path: str) -> Iterator[RunEntry]:
        """A task's runs as listing entries, newest first: the index's columns and documents,
        a record made only when an entry is asked for one."""
        task_paths = ["/".join(split_task_path(task_path))]
        yield from self._query(self._synced_index(task_paths, whole_store=False), task_paths)

    def list_runs(self, task_path: str, limit: int | None = None) -> list[RunRecord]:
        """A task's runs, newest first (file modification time, then ``started_at``)."""
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be 0 or more, not {limit}")
        return list(islice(self.iter_runs(task_path), limit))

    def latest(self, task_path: str) -> RunRecord | None:
        """A task's newest run, or None when it has none."""
        runs = self.list_runs(task_path, limit=1)
        return runs[0] if runs else None

    def iter_search(self, search: RunSearch, *, with_documents: bool = True) -> Iterator[RunEntry]:
        """Entries of ``search``'s runs, newest first, one at a time (memory stays flat)."""
        since = search.since_micros()
        return self._runs(
            self._task_folders(search.task_path, search.task),
            status=search.status,
            since=since,
            with_documents=with_documents,
            whole_store=search.task_path is None and search.task is None,
        )

    def search(
        self,
        task_path: str | None = None,
        status: str | None = None,
        since: str | date | datetime | None = None,
        *,
        task: str | None = None,
    ) -> list[RunRecord]:
        """The runs of ``RunSearch(task_path, status, since, task)``, newest first."""
        entries = self.iter_search(RunSearch(task_path, status, since, task))
        return [entry.record() for entry in entries]

    def _task_folders(self, task_path: str | None, task: str | None) -> list[str]:
        parts = [p for p in (task_path or "").strip("/").split("/") if p]
        if len(parts) > 3:
            raise ValueError(f"a task path is 'usecase/package/task', not {task_path!r}")
        wanted = dict(zip(("usecase", "package", "task"), parts, strict=False))
        if task is not None and wanted.setdefault("task", task) != task:
            return []
        return self.task_paths(**wanted)

    def _runs(
        self,
        task_paths: list[str],
        *,
        status: str | None = None,
        since: int | None = None,
        with_documents: bool = True,
        whole_store: bool = False,
    ) -> Iterator[RunEntry]:
        """Runs of the task folders, newest first, through the index when it can be used."""
        index = self._synced_index(task_paths, whole_store)
        yield from self._query(
            index, task_paths, status=status, since=since, with_documents=with_documents
        )

    def _query(
        self,
        index: RecordIndex | None,
        task_paths: list[str],
        *,
        status: str | None = None,
        since: int | None = None,
        partition: Any = ...,
        with_documents: bool = True,
        on_unreadable: Callable[[str], None] | None = None,
    ) -> Iterator[RunEntry]:
        if index is None:
            return self._scan(task_paths, status, since, partition)
        return _fall_back_if_damaged(
            index.runs(
                task_paths,
                status=status,
                since_micros=since,
                partition=partition,
                with_documents=with_documents,
                on_unreadable=on_unreadable or warn_unreadable,
            ),
            index,
            lambda: self._scan(task_paths, status, since, partition),
        )

    def _scan(
        self, task_paths: list[str], status: str | None, since: int | None, partition: Any
    ) -> Iterator[RunEntry]:
        """The runs read from the folders: files by modification time, newest first; files
        of one time are read together and put in the order ``run_listing`` defines. Lazy."""
        files = [
            (entry, task_path)
            for task_path in task_paths
            for entry in self._record_entries(self.task_dir(task_path))
        ]
        # Within one time, unreadable files are met (and warned about) in the index's order.
        files.sort(key=lambda item: (item[0].mtime, item[1], item[0].name), reverse=True)
        for mtime, group in groupby(files, key=lambda item: item[0].mtime):
            same_time = []
            for entry, task_path in group:
                record = self._read_or_warn(self.task_dir(task_path) / entry.name)
                if record is not None:
                    key = order_key(mtime, *started_order(record.started_at), task_path, entry.name)
                    same_time.append((key, task_path, entry.name, record))
            same_time.sort(key=lambda item: item[0], reverse=True)
            for _, task_path, name, record in same_time:
                if _matches(record, status, since, partition):
                    yield RunEntry.of_record(task_path, name, record)


def _matches(record: RunRecord, status: str | None, since: int | None, partition: Any) -> bool:
    if status is not None and record.status != status:
        return False
    if since is not None:
        _, micros, _ = started_order(record.started_at)
        if micros is None or micros < since:
            return False
    return partition is ... or record.partition_key == partition


def _fall_back_if_damaged(
    entries: Iterator[RunEntry], index: RecordIndex, scan: Callable[[], Iterator[RunEntry]]
) -> Iterator[RunEntry]:
    """``entries`` from the index; if the index proves damaged before the first entry, delete it
    and read the folders instead (after one, the error is reported: the answer would be torn).
    Any other database error is reported as a LineageStoreError."""
    given = False
    try:
        for entry in entries:
            given = True
            yield entry
    except sqlite3.Error as exc:
        if not is_damage(exc):
            raise LineageStoreError(f"cannot read the lineage index {index.path}: {exc}") from exc
        index.discard()
        if given:
            raise LineageStoreError(
                f"the lineage index {index.path} broke while it was read ({exc}); it was "
                "deleted and will be rebuilt: run the command again"
            ) from exc
        yield from scan()
