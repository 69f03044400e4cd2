"""The lineage store: one JSON file per run, on a local disk or any fsspec filesystem.

Layout (the reference's, so ``ubunye lineage`` reads it)::

    <root>/<usecase>/<package>/<task>/<run_id>.json

where ``root`` is usually ``<usecase_dir>/.ubunye/lineage``.

Names. Each of usecase, package, task and run id is one path segment. The store refuses a
segment that could escape the root or break a path: empty, ``.``, ``..``, one holding ``/``,
``\\``, NUL or another control character, or one longer than 255 UTF-8 bytes. Names that come
from elsewhere (a Dagster asset key, a partition key) are made safe first with ``encode_name``:
``A-Z a-z 0-9 _ -`` stay as they are and every other character becomes its UTF-8 bytes written
``%XX`` with upper-case hex (``.`` is ``%2E``, ``%`` is ``%25``, ``/`` is ``%2F``, a space
``%20``, ``é`` ``%C3%A9``). ``decode_name`` reverses it and refuses text ``encode_name`` could
not have produced, so the two are exact inverses. An asset key becomes one task name with
``task_name_for_key``: each part encoded, the parts joined with ``.`` (``["raw", "orders"]`` is
``raw.orders``; ``["a.b"]`` is ``a%2Eb``), and ``key_for_task_name`` splits it back.

Writes are atomic. On a local filesystem the record is written to a hidden temporary file beside
its final name, flushed to disk, then renamed over it; on an object store it is one PUT. A crash
or kill mid-write leaves the previous version (or nothing), never half a record, and writers in
different processes never mix their bytes. A record that cannot be read is skipped by listings
with an ``UnreadableRecordWarning`` naming its file.

Listings and searches answer from the index (``store_index``), brought up to date from the
folders they touch before each answer; ``use_index=False`` reads the files instead, with the same
answers in the same order (``run_listing``).
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import date, datetime
from itertools import groupby, islice
from os import PathLike
from pathlib import Path
from typing import Any

from upath import UPath

from ubunye_core.records.drift import partition_of
from ubunye_core.records.model import RunRecord
from ubunye_core.store.index import (
    INDEX_FILE_NAME,
    FolderState,
    IndexUnavailable,
    Progress,
    RecordIndex,
    SyncReport,
    cached_index_path,
    is_damage,
)
from ubunye_core.store.listing import (
    FileEntry,
    RunEntry,
    epoch_micros,
    instant,
    order_key,
    started_order,
)

#: Where a use case folder keeps its records.
LINEAGE_SUBDIR = (".ubunye", "lineage")

#: Longest name ``encode_name`` returns: room for a 36-character run id, a dot and ``.json``
#: in one 255-byte file name.
MAX_ENCODED_NAME = 200

_MAX_SEGMENT_BYTES = 255
_KEPT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_HEX = "0123456789ABCDEF"
_RECORD_SUFFIX = ".json"


class LineageStoreError(Exception):
    """A lineage store operation could not be done; the message says why."""


class RecordNotFoundError(LineageStoreError, FileNotFoundError):
    """No record fits the task and run id asked for."""


class AmbiguousRunIdError(LineageStoreError, LookupError):
    """A run id prefix fits more than one record; the message lists them."""


class UnreadableRecordError(LineageStoreError, ValueError):
    """A record file is not a readable run record (corrupt, truncated, not JSON)."""


class UnreadableRecordWarning(UserWarning):
    """A listing skipped a record file it could not read."""


# --- names -----------------------------------------------------------------------------------


def encode_name(text: str) -> str:
    """Path-safe, reversible form of ``text``: ``[A-Za-z0-9_-]`` kept, all else as ``%XX`` bytes."""
    if not isinstance(text, str):
        raise TypeError(f"a name is text, not {type(text).__name__}")
    if text == "":
        raise ValueError("a name cannot be empty")
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"name {text!r} is not valid Unicode text: {exc}") from exc
    pieces = []
    for byte in raw:
        char = chr(byte)
        if byte < 0x80 and char in _KEPT:
            pieces.append(char)
        else:
            pieces.append("%" + _HEX[byte >> 4] + _HEX[byte & 0xF])
    encoded = "".join(pieces)
    if len(encoded) > MAX_ENCODED_NAME:
        raise ValueError(
            f"name {text[:40]!r}... is too long: {len(encoded)} characters once encoded, "
            f"the limit is {MAX_ENCODED_NAME}"
        )
    return encoded


def decode_name(text: str) -> str:
    """The name ``encode_name`` turned into ``text``; ValueError for text it could not produce."""
    if text == "":
        raise ValueError("an encoded name cannot be empty")
    raw = bytearray()
    i = 0
    while i < len(text):
        char = text[i]
        if char in _KEPT:
            raw.append(ord(char))
            i += 1
            continue
        if char != "%":
            raise ValueError(f"{text!r} is not an encoded name: {char!r} should be %-encoded")
        pair = text[i + 1 : i + 3]
        if len(pair) != 2 or any(c not in _HEX for c in pair):
            raise ValueError(f"{text!r} is not an encoded name: bad escape at position {i}")
        byte = int(pair, 16)
        if byte < 0x80 and chr(byte) in _KEPT:
            raise ValueError(f"{text!r} is not an encoded name: {chr(byte)!r} is never encoded")
        raw.append(byte)
        i += 3
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{text!r} is not an encoded name: not UTF-8 ({exc})") from exc


def task_name_for_key(parts: Sequence[str]) -> str:
    """One task name for an asset key: each part ``encode_name``-d, joined with ``.``."""
    if isinstance(parts, str):
        raise TypeError("an asset key is a sequence of parts, not one string")
    if not parts:
        raise ValueError("an asset key needs at least one part")
    return ".".join(encode_name(part) for part in parts)


def key_for_task_name(name: str) -> list[str]:
    """The asset key parts ``task_name_for_key`` joined into ``name``."""
    return [decode_name(part) for part in name.split(".")]


def check_segment(text: str, what: str = "name") -> str:
    """``text`` unchanged when it is one safe path segment; ValueError naming the problem if not."""
    if not isinstance(text, str) or text == "":
        raise ValueError(f"{what} must be non-empty text, not {text!r}")
    if text in (".", ".."):
        raise ValueError(f"{what} {text!r} would leave its folder")
    bad = sorted({c for c in text if c in "/\\" or ord(c) < 0x20 or ord(c) == 0x7F})
    if bad:
        raise ValueError(
            f"{what} {text!r} holds {', '.join(repr(c) for c in bad)}, which cannot be in a path "
            f"segment (encode it with encode_name)"
        )
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ValueError(f"{what} {text!r} is not valid Unicode text") from exc
    if size > _MAX_SEGMENT_BYTES:
        raise ValueError(f"{what} {text[:40]!r}... is longer than {_MAX_SEGMENT_BYTES} bytes")
    return text


def split_task_path(task_path: str) -> tuple[str, str, str]:
    """``usecase/package/task`` as its three checked parts."""
    parts = task_path.strip("/").split("/") if isinstance(task_path, str) else []
    if len(parts) != 3:
        raise ValueError(f"a task path is 'usecase/package/task', not {task_path!r}")
    usecase, package, task = parts
    return (
        check_segment(usecase, "usecase"),
        check_segment(package, "package"),
        check_segment(task, "task"),
    )


# --- listing -------------------------------------------------------------------------------


def _entry_mtime(info: dict[str, Any]) -> float:
    """Modification time from an fsspec listing entry; 0 when the filesystem gives none."""
    for key in ("mtime", "LastModified", "last_modified", "updated", "modified", "created"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, (int, float)):
            return float(value)
        moment = instant(value)
        if moment is not None:
            return moment.timestamp()
    return 0.0


def _remote_entry(info: dict[str, Any]) -> FileEntry:
    name = str(info["name"]).rstrip("/").rsplit("/", 1)[-1]
    mtime = _entry_mtime(info)
    tag = info.get("ETag") or info.get("etag") or info.get("md5Hash") or ""
    return FileEntry(name, mtime, (mtime, info.get("size"), str(tag)))


def _local_entry(name: str, stat: os.stat_result) -> FileEntry:
    """A local file's entry. The change time moves on every write, rename or ``utime`` and no
    tool can set it back, so a rewrite is seen even with the same size and modification time."""
    return FileEntry(name, stat.st_mtime, (stat.st_mtime_ns, stat.st_size, stat.st_ctime_ns))


def _matches(record: RunRecord, status: str | None, since: int | None, partition: Any) -> bool:
    if status is not None and record.status != status:
        return False
    if since is not None:
        _, micros, _ = started_order(record.started_at)
        if micros is None or micros < since:
            return False
    return partition is ... or partition_of({"variables": record.variables}) == partition


# --- the store -------------------------------------------------------------------------------


class LineageStore:
    """Run records under one root folder (local path, ``UPath`` or fsspec URL like ``s3://b/x``).

    Listings and searches go through the index (``ubunye_core.store.index``) unless
    ``use_index`` is False, which reads the folders instead; the answers are the same.
    ``progress`` gets ``(done, total)`` while the index reads many record files.
    """

    def __init__(
        self,
        root: str | PathLike[str] | UPath,
        *,
        use_index: bool = True,
        progress: Progress | None = None,
    ) -> None:
        path = UPath(root)
        if self._is_local(path):
            path = UPath(os.path.abspath(path.path))
        self._root = path
        self.use_index = use_index
        self.progress = progress

    @classmethod
    def for_usecase_dir(
        cls, usecase_dir: str | PathLike[str] | UPath, **options: Any
    ) -> LineageStore:
        """The store of a use case folder: ``<usecase_dir>/.ubunye/lineage``."""
        return cls(UPath(usecase_dir).joinpath(*LINEAGE_SUBDIR), **options)

    @property
    def root(self) -> UPath:
        """The folder holding ``<usecase>/<package>/<task>/<run_id>.json``."""
        return self._root

    def __repr__(self) -> str:
        return f"LineageStore({str(self._root)!r})"

    # paths

    def task_dir(self, task_path: str) -> UPath:
        """The folder of one task's records."""
        return self._root.joinpath(*split_task_path(task_path))

    def path_for(self, task_path: str, run_id: str) -> UPath:
        """Where the record of ``run_id`` of ``task_path`` is (or would be) stored."""
        check_segment(run_id, "run id")
        file_name = check_segment(run_id + _RECORD_SUFFIX, "run id file name")
        return self.task_dir(task_path) / file_name

    def index_path(self) -> Path:
        """Where this store's index is: beside the records in a writable local folder, else in
        the cache folder (``$UBUNYE_INDEX_CACHE_DIR`` or the user's cache), keyed by the URL."""
        if self._is_local(self._root):
            folder = self._root.path
            if not os.path.exists(folder) or os.access(folder, os.W_OK | os.X_OK):
                return Path(folder) / INDEX_FILE_NAME
        return cached_index_path(self._store_key())

    # writing

    def save(self, record: RunRecord) -> UPath:
        """Write ``record`` atomically (replacing an earlier version of the same run); its path.
        The index learns of it too (if that fails, the next listing reads the file)."""
        expected = f"{record.usecase}/{record.package}/{record.task_name}"
        if record.task_path.strip("/") != expected:
            raise ValueError(
                f"record task_path {record.task_path!r} does not match its usecase/package/"
                f"task_name {expected!r}"
            )
        path = self.path_for(expected, record.run_id)
        data = (record.to_json() + "\n").encode("utf-8")
        if self._is_local(path):
            _replace_local_file(path.path, data)
        else:
            with suppress(OSError, NotImplementedError):
                path.parent.mkdir(parents=True, exist_ok=True)
            # One PUT: an object store shows either the old object or the whole new one.
            path.fs.pipe_file(path.path, data)
        if self.use_index:
            with suppress(IndexUnavailable, sqlite3.Error, OSError):
                self._index().record_saved(expected, self._file_entry(path), record)
        return path

    # reading

    def read(self, path: str | PathLike[str] | UPath) -> RunRecord:
        """The record in one file; UnreadableRecordError naming the file when it is not one."""
        target = UPath(path)
        try:
            data = target.read_bytes()
        except FileNotFoundError as exc:
            raise RecordNotFoundError(f"no record file at {target}") from exc
        except OSError as exc:
            raise UnreadableRecordError(f"cannot read lineage record {target}: {exc}") from exc
        return _parse_record(target, data)

    def load(self, task_path: str, run_id_or_prefix: str) -> RunRecord:
        """One run of a task, by its run id or a prefix of it that fits exactly one run."""
        prefix = check_segment(run_id_or_prefix, "run id")
        folder = self.task_dir(task_path)
        # A whole run id is one read; only a prefix needs the folder listing.
        with suppress(RecordNotFoundError):
            return self.read(folder / (prefix + _RECORD_SUFFIX))
        files = self._record_entries(folder)
        fits = sorted(entry.name[: -len(_RECORD_SUFFIX)] for entry in files)
        fits = [run_id for run_id in fits if run_id.startswith(prefix)]
        if len(fits) > 1:
            shown = ", ".join(fits[:10]) + (", ..." if len(fits) > 10 else "")
            raise AmbiguousRunIdError(
                f"run id {prefix!r} fits {len(fits)} runs of {task_path}: {shown}; "
                f"give more characters"
            )
        if not fits:
            where = "it has no records" if not files else f"{len(files)} runs, none match"
            raise RecordNotFoundError(
                f"no run {prefix!r} of task {task_path} in {self._root} ({where})"
            )
        return self.read(folder / (fits[0] + _RECORD_SUFFIX))

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
                _warn_unreadable(reason)

        entries = self._query(index, task_paths, on_unreadable=warn_once)
        if not same_partition:
            yield from (entry.record() for entry in entries)
            return
        newest = next(entries, None)
        if newest is None:
            return
        record = newest.record()
        yield record
        partition = partition_of({"variables": record.variables})
        if index is None:
            # Reading the folders: go on with the same lazy pass.
            older = (entry.record() for entry in entries)
            yield from (r for r in older if partition_of({"variables": r.variables}) == partition)
            return
        entries.close()
        # The first run of the partition is the newest itself.
        older_entries = self._query(index, task_paths, partition=partition, on_unreadable=warn_once)
        yield from (entry.record() for entry in islice(older_entries, 1, None))

    def list_runs(self, task_path: str, limit: int | None = None) -> list[RunRecord]:
        """A task's runs, newest first (file modification time, then ``started_at``)."""
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be 0 or more, not {limit}")
        return list(islice(self.iter_runs(task_path), limit))

    def latest(self, task_path: str) -> RunRecord | None:
        """A task's newest run, or None when it has none."""
        runs = self.list_runs(task_path, limit=1)
        return runs[0] if runs else None

    def iter_search(
        self,
        task_path: str | None = None,
        status: str | None = None,
        since: str | date | datetime | None = None,
        *,
        task: str | None = None,
        with_documents: bool = True,
    ) -> Iterator[RunEntry]:
        """Entries of ``search``'s runs, newest first, one at a time (memory stays flat)."""
        since_at = instant(since) if since is not None else None
        if since is not None and since_at is None:
            raise ValueError(f"since must be an ISO date or time, not {since!r}")
        return self._runs(
            self._task_folders(task_path, task),
            status=status,
            since=epoch_micros(since_at) if since_at is not None else None,
            with_documents=with_documents,
            whole_store=task_path is None and task is None,
        )

    def search(
        self,
        task_path: str | None = None,
        status: str | None = None,
        since: str | date | datetime | None = None,
        *,
        task: str | None = None,
    ) -> list[RunRecord]:
        """Runs under ``task_path`` (``usecase``, ``usecase/package``, a whole task path, or None
        for all), of task folders named ``task`` when given, with that status, started on or
        after ``since``; newest first."""
        return [entry.record() for entry in self.iter_search(task_path, status, since, task=task)]

    def task_paths(
        self, usecase: str | None = None, package: str | None = None, task: str | None = None
    ) -> list[str]:
        """Every ``usecase/package/task`` holding a folder, narrowed by the parts given; sorted."""
        for part, what in ((usecase, "usecase"), (package, "package"), (task, "task")):
            if part is not None:
                check_segment(part, what)
        found = []
        for use in [usecase] if usecase else self._subdirs(self._root):
            for pkg in [package] if package else self._subdirs(self._root / use):
                for name in self._subdirs(self._root / use / pkg):
                    if task is None or name == task:
                        found.append(f"{use}/{pkg}/{name}")
        return found

    def reindex(self, *, full: bool = False) -> ReindexReport:
        """Bring the index up to date with every record file (``full``: build it anew)."""
        if not self.use_index:
            raise LineageStoreError("this store was opened without its index")
        if self._is_local(self._root) and not os.path.isdir(self._root.path):
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

    # internals

    @staticmethod
    def _is_local(path: UPath) -> bool:
        protocol = path.fs.protocol
        protocols = (protocol,) if isinstance(protocol, str) else tuple(protocol)
        return "file" in protocols or "local" in protocols

    def _store_key(self) -> str:
        options = self._root.storage_options
        client = options.get("client_kwargs") or {}
        endpoint = options.get("endpoint_url") or client.get("endpoint_url") or ""
        return f"{self._root} {endpoint}".strip()

    def _index(self) -> RecordIndex:
        return RecordIndex(self.index_path(), self._store_key())

    def _listing(self, folder: UPath) -> list[dict[str, Any]]:
        try:
            return list(folder.fs.ls(folder.path, detail=True))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def _subdirs(self, folder: UPath) -> list[str]:
        names = []
        for info in self._listing(folder):
            if info.get("type") == "directory":
                name = str(info["name"]).rstrip("/").rsplit("/", 1)[-1]
                if name and name not in (".", ".."):
                    names.append(name)
        return sorted(names)

    def _record_entries(self, folder: UPath) -> list[FileEntry]:
        """The record files of one folder (``*.json`` files), with times and signatures."""
        if not self._is_local(folder):
            return [
                _remote_entry(info)
                for info in self._listing(folder)
                if info.get("type") == "file" and str(info["name"]).endswith(_RECORD_SUFFIX)
            ]
        found = []
        try:
            listing = os.scandir(folder.path)
        except (FileNotFoundError, NotADirectoryError):
            return []
        # The hot loop of every query (one pass per record file): kept plain on purpose.
        with listing:
            for item in listing:
                name = item.name
                if name[-5:] != _RECORD_SUFFIX or not item.is_file():
                    continue
                try:
                    found.append(_local_entry(name, item.stat()))
                except FileNotFoundError:
                    continue
        return found

    def _file_entry(self, path: UPath) -> FileEntry:
        if self._is_local(path):
            return _local_entry(path.name, os.stat(path.path))
        return _remote_entry(path.fs.info(path.path))

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
                on_unreadable=on_unreadable or _warn_unreadable,
            ),
            index,
            lambda: self._scan(task_paths, status, since, partition),
        )

    def _synced_index(self, task_paths: list[str], whole_store: bool) -> RecordIndex | None:
        """The index, up to date for ``task_paths``; None when it is off or cannot be used here
        (the folders are read instead). A damaged index is deleted and built again once."""
        if not self.use_index:
            return None
        if self._is_local(self._root) and not os.path.isdir(self._root.path):
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
        folders = (
            FolderState(task_path, self._record_entries(self.task_dir(task_path)))
            for task_path in task_paths
        )
        return index.sync(
            folders, self._read_entries, still_gone=self._still_gone, progress=self.progress
        )

    def _still_gone(self, task_path: str, file_name: str) -> bool:
        """A file missing from a listing is still missing (a local check is cheap)."""
        if not self._is_local(self._root):
            return True
        return not os.path.exists(os.path.join(self.task_dir(task_path).path, file_name))

    def _read_entries(
        self, task_path: str, entries: list[FileEntry]
    ) -> Iterator[tuple[FileEntry, RunRecord | None, str | None]]:
        """Each file's record, or None and why it is unreadable; object stores in batches."""
        folder = self.task_dir(task_path)
        if self._is_local(folder):
            for entry in entries:
                try:
                    yield entry, self.read(folder / entry.name), None
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
                    yield entry, _parse_record(path, data), None
                except LineageStoreError as exc:
                    yield entry, None, str(exc)

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

    def _read_or_warn(self, path: UPath) -> RunRecord | None:
        try:
            return self.read(path)
        except LineageStoreError as exc:
            _warn_unreadable(str(exc))
            return None


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


_REMOTE_BATCH = 256


def _parse_record(target: UPath, data: bytes) -> RunRecord:
    try:
        return RunRecord.from_json(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UnreadableRecordError(f"cannot read lineage record {target}: {exc}") from exc
    except ValueError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UnreadableRecordError(f"{target} is not a valid run record: {reason}") from exc


def _warn_unreadable(reason: str) -> None:
    warnings.warn(
        f"skipped an unreadable lineage record: {reason}", UnreadableRecordWarning, stacklevel=5
    )


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


def _replace_local_file(target: str, data: bytes) -> None:
    """Write ``data`` to a hidden file beside ``target``, flush it to disk, rename it over."""
    folder, name = os.path.split(target)
    os.makedirs(folder, exist_ok=True)
    temp = os.path.join(folder, f".{name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    # O_EXCL: two writers never share a temporary file; 0o666 lets the umask decide, as for
    # any new file (mkstemp would make it owner-only).
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp)
        raise
    _sync_folder(folder)


def _sync_folder(folder: str) -> None:
    """Make the rename itself durable where the platform allows opening a folder."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
