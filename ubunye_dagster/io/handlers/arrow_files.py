"""Parquet on a UPath through Arrow, written atomically, for the pandas, pyarrow, polars handlers.

Local: the file is written beside its target under a hidden temporary name and renamed over it
(one atomic rename). Object stores: the file is built in memory and sent with one put, so a reader
sees the old object or the new one, never part of one.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ubunye_core.materialisations.beside import run_beside
from ubunye_core.materialisations.byte_digest import bytes_digest, local_file_digest
from ubunye_core.materialisations.removals import replace_local
from ubunye_core.materialisations.staging import remove_dead_staging, staging_name
from ubunye_core.materialisations.stored import (
    file_system_of,
    footer_notes,
    hashed_view,
    pandas_view,
    stored_notes,
)
from ubunye_core.paths import is_local
from ubunye_rows.hashing import fingerprint, fingerprint_arrow
from ubunye_rows.hashing.fingerprint import failed_fingerprint

__all__ = ["footer_notes", "hashed_view", "pandas_view"]

#: Columns pandas adds for an unnamed index; they are not the asset's columns.
INDEX_PREFIX = "__index_level_"


def native_path(path: Any) -> str:
    """The path as its file system names it (an absolute path locally, bucket/key remotely)."""
    return str(path) if is_local(path) else path.path


def temporary_sibling(path: Any) -> Any:
    """A fresh hidden name in the same folder as ``path``, for staging a write; the name says
    which process stages it (``ubunye_core.materialisations.staging``)."""
    return path.parent / staging_name(path.name)


def staging_folder(path: Any) -> Any:
    """A fresh hidden folder beside ``path``, to stage a write at ``<folder>/<path.name>``.

    Whoever lists the parent (Spark, pyarrow datasets) skips the hidden folder; the staged name
    inside it is not hidden, so Spark reads it back without ignoring it.
    """
    return path.parent / staging_name("stage")


def _write_parquet(table: pa.Table, sink: Any) -> pq.ParquetWriter:
    """Write ``table``'s rows as Parquet to ``sink`` (a local path or an Arrow output stream);
    returns the writer, still open, so notes can join the footer once they are known."""
    writer = pq.ParquetWriter(sink, table.schema)
    try:
        writer.write_table(table)
    except BaseException:
        writer.close()
        raise
    return writer


#: Footer note of a table with rows but no columns: Parquet keeps no rows without a column, so
#: the count is kept beside the (empty) schema and the rows are given back on reading.
ROWS_WITHOUT_COLUMNS_KEY = "ubunye.rows_without_columns"


def row_count_note(table: pa.Table) -> dict[str, str]:
    """The note a table with rows and no columns needs to be read back whole; else none."""
    if table.num_columns == 0 and table.num_rows > 0:
        return {ROWS_WITHOUT_COLUMNS_KEY: str(table.num_rows)}
    return {}


def with_noted_row_count(table: pa.Table, notes: Mapping[str, str]) -> pa.Table:
    """A stored table with no columns given back the rows its writer noted."""
    noted = notes.get(ROWS_WITHOUT_COLUMNS_KEY)
    if table.num_columns or not noted:
        return table
    # Metadata first: Arrow drops the row count of a column-less table whose metadata is replaced.
    placeholder = pa.table({"_": pa.nulls(int(noted))}).replace_schema_metadata(
        table.schema.metadata
    )
    return placeholder.drop_columns(["_"])


def remove_path(path: Any) -> None:
    """Delete a file or folder if it is there."""
    fs = path.fs
    target = native_path(path)
    if fs.exists(target):
        fs.rm(target, recursive=fs.isdir(target))


class StagedParquetFile:
    """One Parquet file written in a thread beside its target (locally under a hidden name, for an
    object store in memory), so hashing the rows overlaps encoding them. ``finish`` adds the notes
    to the footer, digests the bytes and moves the file into place atomically; ``abandon`` leaves
    nothing behind.

    The encoder writes to a native sink, never through Python, so it never waits for the GIL the
    row hash holds; the bytes are digested once closed (locally from the page cache, which costs
    less than a Python sink's GIL hand-offs: see bench/README.md).
    """

    def __init__(self, table: pa.Table, path: Any):
        self.path = path
        self.staged: str | None = None
        if is_local(path):
            os.makedirs(os.path.dirname(str(path)), exist_ok=True)
            self.staged = str(temporary_sibling(path))
            self._sink: Any = self.staged
        else:
            self._sink = pa.BufferOutputStream()
        self._writer: pq.ParquetWriter | None = None
        #: Seconds spent writing (in the thread, then finishing).
        self.seconds = 0.0
        self._encoded = run_beside(self._write_rows, table)

    def _write_rows(self, table: pa.Table) -> None:
        started = time.perf_counter()
        try:  # an encoder's error is the future's, raised again by finish in the caller's thread
            self._writer = _write_parquet(table, self._sink)
        finally:
            self.seconds += time.perf_counter() - started

    def encoding(self) -> bool:
        """True while the encoder thread is still writing rows (it holds a core)."""
        return not self._encoded.done()

    def finish(self, notes: Mapping[str, str]) -> str:
        """Close the file with ``notes`` in its footer and put it in place; returns its digest."""
        self._encoded.result()
        started = time.perf_counter()
        self._writer.add_key_value_metadata({key: str(value) for key, value in notes.items()})
        self._writer.close()
        self._writer = None
        if self.staged is not None:
            # The encoder and the row hash are done: the digest may take every core.
            digest = local_file_digest(self.staged, every_core=True)
            replace_local(self.staged, str(self.path))
            sweep_dead_staging(self.path)
        else:
            data = self._sink.getvalue()
            digest = bytes_digest(data)
            _put_object(self.path, data.to_pybytes())
        self.seconds += time.perf_counter() - started
        return digest

    def abandon(self) -> None:
        """Stop here: nothing is put in place and the staged file is removed."""
        self._encoded.exception()  # waits for the encoder; a failed one has nothing to keep
        with contextlib.suppress(Exception):  # a writer that failed may not close cleanly
            if self._writer is not None:
                self._writer.close()
        if self.staged is not None and os.path.exists(self.staged):
            os.remove(self.staged)


def _put_object(path: Any, data: bytes) -> None:
    """Store ``data`` at ``path`` on an object store in one put (replacing a Spark folder)."""
    fs = path.fs
    if fs.exists(path.path) and fs.isdir(path.path):
        fs.rm(path.path, recursive=True)  # an earlier folder-shaped (Spark) materialisation
    fs.makedirs(path.parent.path, exist_ok=True)
    fs.pipe_file(path.path, data)


#: Seconds between two sweeps of one folder by this process: listing a folder of many assets on
#: every write cost a small asset more than its Parquet write, and what a killed writer left
#: waits a minute at most (``ubunye-dagster clean`` removes it at once).
SWEEP_INTERVAL_SECONDS = 60.0
_SWEPT: dict[str, float] = {}
_SWEPT_LOCK = threading.Lock()


def sweep_dead_staging(path: Any) -> list[str]:
    """Remove what killed writers staged beside ``path`` (a live writer's entry stays), unless
    this process swept that folder in the last ``SWEEP_INTERVAL_SECONDS``. A sweep that fails (a
    read-only listing, a race) never fails the write that asked for it."""
    folder = native_path(path.parent)
    key = f"{path.protocol}:{folder}"
    now = time.monotonic()
    with _SWEPT_LOCK:
        if now - _SWEPT.get(key, -SWEEP_INTERVAL_SECONDS) < SWEEP_INTERVAL_SECONDS:
            return []
        _SWEPT[key] = now
    try:
        return remove_dead_staging(path.fs, folder)
    except OSError:
        return []


def without_index_columns(table: pa.Table) -> pa.Table:
    """``table`` without the columns pandas adds for an unnamed index."""
    extra = [name for name in table.column_names if name.startswith(INDEX_PREFIX)]
    return table.drop_columns(extra) if extra else table


def fingerprint_stored(table: pa.Table, writer: str | None, view: pa.Table | None = None) -> Any:
    """rows-v1 of a stored table under its writer's rules (pandas rules for pandas); never raises.

    ``view`` is ``hashed_view(table, writer)`` when the caller has prepared it already.
    """
    if view is None:
        try:
            view = hashed_view(table, writer)
        except ValueError:
            return fingerprint(table.to_pandas())
        except Exception as exc:  # the honest-failure path of the hash itself
            return failed_fingerprint(table, exc)
    return fingerprint_arrow(view)


def stored_writer_notes(path: Any) -> dict[str, str]:
    """The writer's notes of the materialisation at ``path`` (a UPath): a folder's sidecar, or
    a single file's Parquet footer."""
    return stored_notes(*file_system_of(path, {}))
