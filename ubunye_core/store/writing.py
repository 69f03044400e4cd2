"""Writing run records, atomically.

On a local filesystem the record is written to a hidden temporary file beside its final name,
then renamed over it; on an object store it is one PUT. A crash or kill mid-write leaves the
previous version (or nothing), never half a record, and writers in different processes never
mix their bytes. A durable store also flushes the file and its folder to disk (fsync), so the
record survives a power loss too; that costs two disk flushes a save, which is why it is a
choice (the data files beside the records are not flushed either).
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from contextlib import suppress
from functools import partial
from typing import TYPE_CHECKING

from ubunye_core.paths import is_local
from ubunye_core.store.index import IndexUnavailable
from ubunye_core.store.later import queue_index_update, settle_index_updates
from ubunye_core.store.layout import StoreLayout

if TYPE_CHECKING:
    from upath import UPath

    from ubunye_core.records.model import RunRecord
    from ubunye_core.store.listing import FileEntry


class RecordWriter(StoreLayout):
    """Writes the store's record files (and tells the index)."""

    def save(self, record: RunRecord, *, index: bool = True, index_later: bool = False) -> UPath:
        """Write ``record`` atomically (replacing an earlier version of the same run); its path.
        The index learns of it too, unless ``index`` is False (a record about to be replaced),
        after this returns when ``index_later`` (``ubunye_core.store.later``); either way the
        next listing finds the file (if telling the index fails, it reads it)."""
        expected = f"{record.usecase}/{record.package}/{record.task_name}"
        if record.task_path.strip("/") != expected:
            raise ValueError(
                f"record task_path {record.task_path!r} does not match its usecase/package/"
                f"task_name {expected!r}"
            )
        path = self.path_for(expected, record.run_id)
        text = record.to_json()
        data = (text + "\n").encode("utf-8")
        if is_local(path):
            _replace_local_file(path.path, data, durable=self.durable)
        else:
            with suppress(OSError, NotImplementedError):
                path.parent.mkdir(parents=True, exist_ok=True)
            # One PUT: an object store shows either the old object or the whole new one.
            path.fs.pipe_file(path.path, data)
        if self.use_index and index:
            tell = partial(self._tell_index, expected, self._file_entry(path), record, text)
            if index_later:
                queue_index_update(tell)
            else:
                settle_index_updates()  # an update queued earlier must not land after this one
                tell()
        return path

    def _tell_index(self, task_path: str, entry: FileEntry, record: RunRecord, text: str) -> None:
        """Put the saved record in the index; a failure leaves it to the next listing."""
        with suppress(IndexUnavailable, sqlite3.Error, OSError):
            self._index().record_saved(task_path, entry, record, text)


def _replace_local_file(target: str, data: bytes, *, durable: bool) -> None:
    """Write ``data`` to a hidden file beside ``target`` and rename it over; ``durable``: flush
    the file to disk before the rename and the folder after it."""
    folder, name = os.path.split(target)
    os.makedirs(folder, exist_ok=True)
    temp = os.path.join(folder, f".{name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    # O_EXCL: two writers never share a temporary file; 0o666 lets the umask decide, as for
    # any new file (mkstemp would make it owner-only).
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp)
        raise
    if durable:
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
