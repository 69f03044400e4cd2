"""Stored materialisations read back as rows-v1 saw them when they were written, and the note
their writer left beside them.

A Parquet file keeps its writer's notes (who wrote it, its data and schema hashes) in its footer;
a folder of part files keeps them in a ``_ubunye.json`` sidecar; a Delta commit in its custom
metadata. A table pandas wrote is hashed as the pandas frame was, so it is read back through the
same preparation (:func:`pandas_view`).
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any

from ubunye_core.materialisations.beside import run_beside
from ubunye_core.paths import is_local

if TYPE_CHECKING:
    import pyarrow as pa

#: The prefix of every note key; a note is a string key and a string value.
NOTE_PREFIX = "ubunye."
#: Who wrote a materialisation: the frame library (``pandas``, ``pyarrow``, ``polars``, ``spark``).
WRITER_KEY = "ubunye.writer"
#: The rows-v1 data hash of the rows written.
DATA_HASH_KEY = "ubunye.data_hash"
#: The rows-v1 schema hash of the rows written.
SCHEMA_HASH_KEY = "ubunye.schema_hash"
#: The notes file beside a folder-shaped (Spark) materialisation; readers skip ``_`` files.
SIDECAR_NAME = "_ubunye.json"


def footer_notes(source: Any) -> dict[str, str]:
    """The writer's notes among the key-value metadata of ``source`` (a Parquet file's
    ``FileMetaData``, or an Arrow schema): the ``ubunye.`` keys."""
    prefix = NOTE_PREFIX.encode()
    return {
        key.decode(): value.decode()
        for key, value in (source.metadata or {}).items()
        if key.startswith(prefix)
    }


def read_sidecar(fs: Any, folder: str) -> dict[str, str]:
    """The sidecar notes of the folder-shaped materialisation at ``folder`` (a path on the fsspec
    file system ``fs``); empty when there are none.

    Whether it is there is asked first: file systems report a missing file under a file in
    their own ways (``memory://`` raises FileExistsError, local NotADirectoryError).
    """
    sidecar = f"{folder.rstrip('/')}/{SIDECAR_NAME}"
    try:
        if not fs.isfile(sidecar):
            return {}
        with fs.open(sidecar, "r") as handle:
            return dict(json.load(handle))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, ValueError):
        return {}


def stored_notes(fs: Any, path: str) -> dict[str, str]:
    """The writer's notes of the materialisation at ``path``: a folder's sidecar, or a single
    file's Parquet footer; empty when nothing is known (no sidecar, not Parquet)."""
    notes = read_sidecar(fs, path)
    if notes:
        return notes
    import pyarrow.parquet as pq

    try:
        if _is_local(fs):
            return footer_notes(pq.read_metadata(path))
        with fs.open(path, "rb") as handle:
            return footer_notes(pq.read_metadata(handle))
    except Exception:  # a folder without sidecar, or not Parquet: nothing is known
        return {}


def _index_field_names(table: pa.Table) -> tuple[list[str], list[str]]:
    """The stored pandas index columns of ``table``: (named ones, unnamed ones)."""
    meta = table.schema.pandas_metadata or {}
    stored = {name for name in meta.get("index_columns", []) if isinstance(name, str)}
    named, unnamed = [], []
    for column in meta.get("columns", []):
        if column.get("field_name") in stored:
            (named if column.get("name") is not None else unnamed).append(column["field_name"])
    return named, unnamed


def pandas_view(table: pa.Table) -> pa.Table:
    """A table written from a pandas frame, as rows-v1 sees that frame (without converting back).

    The same preparation ``ubunye_core`` gives a pandas frame, done on the Arrow columns: an
    unnamed index is left out, a named one is kept as columns; categories become their values'
    type; null and large_string become string; a naive datetime is a UTC instant; every
    timestamp is cut to microseconds. Raises ValueError for an index that is partly named,
    which only the pandas path itself prepares faithfully.
    """
    from ubunye_rows.hashing.frames import pandas_columns_as_spark_types

    named, unnamed = _index_field_names(table)
    if named and unnamed:
        raise ValueError("an index with named and unnamed levels")
    if unnamed:
        table = table.drop_columns(unnamed)
    return pandas_columns_as_spark_types(table, "UTC")


def hashed_view(table: pa.Table, writer: str | None) -> pa.Table:
    """The table rows-v1 hashes for a stored table: ``pandas_view`` when pandas wrote it (or,
    the writer unknown, it carries pandas metadata), else the table itself."""
    if writer == "pandas" or (writer is None and table.schema.pandas_metadata is not None):
        return pandas_view(table)
    return table


@dataclass
class StoredTable:
    """One stored materialisation read as one Arrow table, with what its writer left beside it."""

    location: str
    table: pa.Table
    #: The writer's notes (Parquet footer, a folder's sidecar, or a Delta commit's metadata).
    notes: dict[str, str] = field(default_factory=dict)
    #: The digest of the stored bytes, when asked for
    #: (``ubunye_core.materialisations.byte_digest``).
    bytes_hash: str | None = None
    #: Seconds the byte digest took, in a thread beside the decode.
    bytes_seconds: float = 0.0

    @property
    def writer(self) -> str | None:
        """Who wrote it, when its notes say."""
        return self.notes.get(WRITER_KEY)

    @cached_property
    def view(self) -> pa.Table:
        """Its rows as rows-v1 hashes them (ValueError for an index only pandas prepares)."""
        return hashed_view(self.table, self.writer)


#: The formats ``read_stored`` reads back (a warehouse table's rows stay in its database).
STORED_FORMATS = ("parquet", "delta")


def read_stored(
    location: Any,
    *,
    format: str = "parquet",
    version: int | None = None,
    predicate: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    digest_with: str | None = None,
) -> StoredTable:
    """The materialisation at ``location`` (a path or fsspec URL, or a UPath with its own file
    system) with its writer's notes.

    ``format`` is the record's step format: ``parquet`` (a file or a folder of part files; with
    ``digest_with``, an algorithm, the digest of its bytes too, hashed while Arrow decodes) or
    ``delta`` (``version`` picks the table version, the latest when None; ``predicate`` the rows
    of one partition). FileNotFoundError when nothing is stored there, OSError when the store
    cannot be read (no credentials, say).
    """
    if format == "delta":
        return _read_delta(str(location), version, predicate, storage_options)
    if format != "parquet":
        raise ValueError(f"cannot read a stored {format!r} materialisation (parquet or delta)")
    fs, path = file_system_of(location, storage_options or {})
    if _is_local(fs):  # one stat says whether it is there and whether it is a folder
        return _read_parquet(fs, path, str(location), digest_with)
    try:
        stored = fs.exists(path)
    except Exception as exc:  # whatever the store's client raises: credentials, endpoint
        raise OSError(f"cannot read {location}: {exc} ({type(exc).__name__})") from exc
    if not stored:
        raise FileNotFoundError(f"nothing is stored at {location}")
    return _read_parquet(fs, path, str(location), digest_with)


def file_system_of(location: Any, storage_options: Mapping[str, Any]) -> tuple[Any, str]:
    """The fsspec file system and its path of ``location``: a UPath's own (the plain local file
    system for a local one), else what the URL names with ``storage_options``."""
    import fsspec
    from fsspec.core import url_to_fs

    fs = getattr(location, "fs", None)
    if fs is None:
        return url_to_fs(str(location), **dict(storage_options))
    if is_local(location):
        return fsspec.filesystem("file"), str(location)
    return fs, location.path


def _is_local(fs: Any) -> bool:
    """True for the local file system (Arrow reads it natively)."""
    protocol = getattr(fs, "protocol", "")
    return "file" in ((protocol,) if isinstance(protocol, str) else protocol)


def _timed(compute: Callable[[], str]) -> tuple[str, float]:
    started = time.perf_counter()
    return compute(), time.perf_counter() - started


#: Files up to this size are digested in the reading thread: handing a few hundred kilobytes
#: to a helper thread costs about what digesting them does.
DIGEST_BESIDE_BYTES = 1 << 20


def _read_parquet(fs: Any, path: str, location: str, digest_with: str | None) -> StoredTable:
    """The Parquet file, or folder of part files, at ``path`` on ``fs`` as one table with its
    notes. A file is read into memory once: the digest and the decode share those bytes."""
    import pyarrow.parquet as pq

    from ubunye_core.materialisations.byte_digest import folder_digest

    if _is_local(fs):
        folder, data = _local_file_or_folder(path, location)
    else:
        folder = fs.isdir(path)
        data = None if folder else fs.cat_file(path)
    if not folder:
        return _read_parquet_bytes(data, location, digest_with)
    pending = None
    if digest_with:
        pending = run_beside(_timed, partial(folder_digest, fs, path, digest_with))
    table = pq.read_table(path, filesystem=None if _is_local(fs) else fs)
    notes = read_sidecar(fs, path) or footer_notes(table.schema)
    bytes_hash, seconds = pending.result() if pending is not None else (None, 0.0)
    return StoredTable(location, table, notes, bytes_hash, seconds)


def _local_file_or_folder(path: str, location: str) -> tuple[bool, bytes | None]:
    """Whether the local ``path`` is a folder, and a file's bytes (FileNotFoundError, as for
    nothing stored, when it cannot be seen)."""
    try:
        folder = stat.S_ISDIR(os.stat(path).st_mode)
    except OSError as exc:
        raise FileNotFoundError(f"nothing is stored at {location}") from exc
    if folder:
        return True, None
    with open(path, "rb") as handle:
        return False, handle.read()


def _read_parquet_bytes(data: bytes, location: str, digest_with: str | None) -> StoredTable:
    """One Parquet file's bytes decoded with its footer parsed once, digested beside the decode
    (in this thread when small); the table's schema metadata is the writer's table's, as
    ``pq.read_table`` gives it (the footer's notes are not among it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ubunye_core.materialisations.byte_digest import bytes_digest

    digest = partial(_timed, partial(bytes_digest, data, digest_with or ""))
    pending = None
    if digest_with and len(data) > DIGEST_BESIDE_BYTES:
        pending = run_beside(digest)
    file = pq.ParquetFile(pa.BufferReader(data))
    table = file.read().replace_schema_metadata(file.schema_arrow.metadata)
    notes = footer_notes(file.metadata)
    if pending is not None:
        bytes_hash, seconds = pending.result()
    else:
        bytes_hash, seconds = digest() if digest_with else (None, 0.0)
    return StoredTable(location, table, notes, bytes_hash, seconds)


def _read_delta(
    location: str,
    version: int | None,
    predicate: str | None,
    storage_options: Mapping[str, Any] | None,
) -> StoredTable:
    """Version ``version`` (the latest when None) of the Delta table at ``location``, with the
    notes of the commit that made it."""
    from ubunye_core.materialisations.delta import (
        commit_info,
        commit_notes,
        latest_version,
        read_delta_version,
    )

    table = read_delta_version(location, version, storage_options, predicate)
    if version is None:
        version = latest_version(location, storage_options)
    notes = commit_notes(commit_info(location, version, storage_options))
    return StoredTable(location, table, notes)
