"""Where a lineage store keeps things, and what its folders hold.

Layout (the reference's, so ``ubunye lineage`` reads it)::

    <root>/<usecase>/<package>/<task>/<run_id>.json

where ``root`` is usually ``<usecase_dir>/.ubunye/lineage``. The root is a local path, a
``UPath`` or an fsspec URL (``s3://bucket/x``); the index lives beside the records in a writable
local folder, else in the cache folder, keyed by the store's URL.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sys
from array import array
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ubunye_core.paths import is_local
from ubunye_core.records.times import instant
from ubunye_core.store.index import (
    INDEX_FILE_NAME,
    FolderState,
    Progress,
    RecordIndex,
    cached_index_path,
)
from ubunye_core.store.listing import FileEntry
from ubunye_core.store.names import LINEAGE_SUBDIR, check_segment, split_task_path

#: A record file's name is its run id and this suffix.
RECORD_SUFFIX = ".json"

_Store = TypeVar("_Store", bound="StoreLayout")

#: A URL's scheme (``s3:``, ``file:``, ``memory:``); one letter is a Windows drive, not a scheme.
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")

if TYPE_CHECKING:
    from upath import UPath


def plain_local_path(root: str | PathLike[str] | UPath) -> str | None:
    """``root`` as an absolute path when it is a plain local one (text without a URL scheme, or a
    ``pathlib`` path); None for a URL or a ``UPath``, which fsspec resolves."""
    upath = sys.modules.get("upath")
    if upath is not None and isinstance(root, upath.UPath):
        return None
    text = os.fspath(root)
    if not isinstance(text, str) or _SCHEME.match(text):
        return None
    return os.path.abspath(text)


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


def _local_digest(names: list[str], stats: list[os.stat_result]) -> bytes:
    """The digest of a local listing: names, then each file's signature as ``_local_entry``
    takes it, in listing order."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update("\0".join(names).encode("utf-8", "surrogateescape"))
    numbers = [n for st in stats for n in (st.st_mtime_ns, st.st_size, st.st_ctime_ns)]
    try:
        digest.update(array("q", numbers).tobytes())
    except OverflowError:  # a time past 2262
        digest.update(repr(numbers).encode())
    return digest.digest()


def _entries_digest(entries: list[FileEntry]) -> bytes:
    """The digest of an object store's listing: each file's name and signature, in order."""
    shown = repr([(entry.name, entry.signature) for entry in entries])
    return hashlib.blake2b(shown.encode("utf-8", "surrogateescape"), digest_size=16).digest()


def as_path(location: str | PathLike[str] | UPath) -> Path | UPath:
    """``location`` as a path to open: a ``pathlib`` one when it is plain local (fsspec is not
    loaded for it), else a ``UPath``. Both print as the location given."""
    if plain_local_path(location) is not None:
        return Path(location)
    from upath import UPath

    return UPath(location)


class StoreLayout:
    """A lineage store's root folder, the paths under it and the listings of its folders."""

    def __init__(
        self,
        root: str | PathLike[str] | UPath,
        *,
        use_index: bool = True,
        progress: Progress | None = None,
        durable: bool = False,
    ) -> None:
        #: The root as a local path, when it is one: listings and the index need no fsspec then.
        self._local_root = plain_local_path(root)
        if self._local_root is None:
            from upath import UPath

            path = UPath(root)
            if is_local(path):
                self._local_root = os.path.abspath(path.path)
            else:
                self._root = path
        self.use_index = use_index
        self.progress = progress
        #: Local records are flushed to disk (the file, then its folder) before they count as
        #: saved: they survive a power loss, at two fsyncs a save.
        self.durable = durable

    @classmethod
    def for_usecase_dir(
        cls: type[_Store], usecase_dir: str | PathLike[str] | UPath, **options: Any
    ) -> _Store:
        """The store of a use case folder: ``<usecase_dir>/.ubunye/lineage``."""
        if plain_local_path(usecase_dir) is not None:
            return cls(os.path.join(usecase_dir, *LINEAGE_SUBDIR), **options)
        from upath import UPath

        return cls(UPath(usecase_dir).joinpath(*LINEAGE_SUBDIR), **options)

    @functools.cached_property
    def _root(self) -> UPath:
        """The root as a ``UPath`` (a local root's made when first asked for)."""
        from upath import UPath

        return UPath(self._local_root)

    @property
    def root(self) -> UPath:
        """The folder holding ``<usecase>/<package>/<task>/<run_id>.json``."""
        return self._root

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self._root)!r})"

    def task_dir(self, task_path: str) -> UPath:
        """The folder of one task's records."""
        return self._root.joinpath(*split_task_path(task_path))

    def path_for(self, task_path: str, run_id: str) -> UPath:
        """Where the record of ``run_id`` of ``task_path`` is (or would be) stored."""
        check_segment(run_id, "run id")
        file_name = check_segment(run_id + RECORD_SUFFIX, "run id file name")
        return self.task_dir(task_path) / file_name

    def index_path(self) -> Path:
        """Where this store's index is: beside the records in a writable local folder, else in
        the cache folder (``$UBUNYE_INDEX_CACHE_DIR`` or the user's cache), keyed by the URL."""
        if self._local_root is not None:
            folder = self._local_root
            if not os.path.exists(folder) or os.access(folder, os.W_OK | os.X_OK):
                return Path(folder) / INDEX_FILE_NAME
        return cached_index_path(self._store_key())

    def task_paths(
        self, usecase: str | None = None, package: str | None = None, task: str | None = None
    ) -> list[str]:
        """Every ``usecase/package/task`` holding a folder, narrowed by the parts given; sorted."""
        for part, what in ((usecase, "usecase"), (package, "package"), (task, "task")):
            if part is not None:
                check_segment(part, what)
        found = []
        for use in [usecase] if usecase else self._subdirs(self._folder()):
            for pkg in [package] if package else self._subdirs(self._folder(use)):
                for name in self._subdirs(self._folder(use, pkg)):
                    if task is None or name == task:
                        found.append(f"{use}/{pkg}/{name}")
        return found

    def _folder(self, *parts: str) -> str | UPath:
        """The folder ``parts`` under the root: a path string when the store is local."""
        if self._local_root is not None:
            return os.path.join(self._local_root, *parts)
        return self._root.joinpath(*parts)

    def _task_folder(self, task_path: str) -> str | UPath:
        """A task's folder, as ``_folder`` gives it."""
        return self._folder(*split_task_path(task_path))

    def _store_key(self) -> str:
        if self._local_root is not None:
            return f"{self._local_root} ".strip()
        options = self._root.storage_options
        client = options.get("client_kwargs") or {}
        endpoint = options.get("endpoint_url") or client.get("endpoint_url") or ""
        return f"{self._root} {endpoint}".strip()

    def _index(self) -> RecordIndex:
        return RecordIndex(self.index_path(), self._store_key())

    def _listing(self, folder: UPath) -> list[dict[str, Any]]:
        """The folder's entries as the store holds them now: an object store's client caches
        listings (s3fs keeps them for its lifetime), which would hide records written since."""
        try:
            if not is_local(folder):
                folder.fs.invalidate_cache(folder.path)
            return list(folder.fs.ls(folder.path, detail=True))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def _subdirs(self, folder: str | UPath) -> list[str]:
        if isinstance(folder, str):
            try:
                with os.scandir(folder) as listing:
                    return sorted(item.name for item in listing if item.is_dir())
            except (FileNotFoundError, NotADirectoryError):
                return []
        names = []
        for info in self._listing(folder):
            if info.get("type") == "directory":
                name = str(info["name"]).rstrip("/").rsplit("/", 1)[-1]
                if name and name not in (".", ".."):
                    names.append(name)
        return sorted(names)

    def _record_entries(self, folder: str | UPath) -> list[FileEntry]:
        """The record files of one folder (``*.json`` files), with times and signatures; a
        local folder may be given as its path."""
        if not isinstance(folder, str) and not is_local(folder):
            return self._remote_entries(folder)
        names, stats = _local_stats(folder if isinstance(folder, str) else folder.path)
        return [_local_entry(name, stat) for name, stat in zip(names, stats, strict=True)]

    def _folder_state(self, task_path: str) -> FolderState:
        """A task folder's listing as the index's sync takes it: the entries of a local folder
        are made only if the sync compares them."""
        folder = self._task_folder(task_path)
        if not isinstance(folder, str) and not is_local(folder):
            entries = self._remote_entries(folder)
            return FolderState(task_path, len(entries), _entries_digest(entries), lambda: entries)
        names, stats = _local_stats(folder if isinstance(folder, str) else folder.path)
        return FolderState(
            task_path,
            len(names),
            _local_digest(names, stats),
            lambda: [_local_entry(name, stat) for name, stat in zip(names, stats, strict=True)],
        )

    def _remote_entries(self, folder: UPath) -> list[FileEntry]:
        return [
            _remote_entry(info)
            for info in self._listing(folder)
            if info.get("type") == "file" and str(info["name"]).endswith(RECORD_SUFFIX)
        ]

    def _file_entry(self, path: UPath) -> FileEntry:
        if is_local(path):
            return _local_entry(path.name, os.stat(path.path))
        return _remote_entry(path.fs.info(path.path))


def _local_stats(folder: str) -> tuple[list[str], list[os.stat_result]]:
    """The names of a local folder's record files and their ``stat``, in listing order."""
    names, stats = [], []
    try:
        listing = os.scandir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return names, stats
    # The hot loop of every query (one pass per record file): kept plain on purpose.
    with listing:
        for item in listing:
            name = item.name
            if name[-5:] != RECORD_SUFFIX or not item.is_file():
                continue
            try:
                stats.append(item.stat())
            except FileNotFoundError:
                continue
            names.append(name)
    return names, stats
