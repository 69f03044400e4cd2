"""Stored materialisations read back as rows-v1 saw them when they were written.

A Parquet file (or a folder of part files) keeps its writer's notes (``ubunye.writer``,
``ubunye.data_hash``) in the footer or a ``_ubunye.json`` sidecar. A table pandas wrote is hashed
as the pandas frame was, so it is read back through the same preparation (:func:`pandas_view`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

#: The notes file beside a folder-shaped (Spark) materialisation; readers skip ``_`` files.
SIDECAR_NAME = "_ubunye.json"


def footer_notes(schema: pa.Schema) -> dict[str, str]:
    """The writer's notes kept in a Parquet schema's metadata (the ``ubunye.`` keys)."""
    return {
        key.decode(): value.decode()
        for key, value in (schema.metadata or {}).items()
        if key.startswith(b"ubunye.")
    }


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


@dataclass(frozen=True)
class StoredTable:
    """One stored materialisation: its rows as rows-v1 hashes them, and who wrote them."""

    location: str
    view: pa.Table
    writer: str | None


def read_stored(
    location: str,
    *,
    format: str = "parquet",
    version: int | None = None,
    predicate: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> StoredTable:
    """The materialisation at ``location`` (a path or fsspec URL) as rows-v1 sees it.

    ``format`` is the record's step format: ``parquet`` (a file or a folder of part files) or
    ``delta`` (``version`` picks the table version, the latest when None; ``predicate`` the
    rows of one partition). FileNotFoundError when nothing is stored there, OSError when the
    store cannot be read (no credentials, say).
    """
    if format == "delta":
        from ubunye_core.materialisations.delta import (
            commit_info,
            commit_notes,
            latest_version,
            read_delta_version,
        )

        table = read_delta_version(location, version, storage_options, predicate)
        if version is None:
            version = latest_version(location, storage_options)
        writer = commit_notes(commit_info(location, version, storage_options)).get("ubunye.writer")
        return StoredTable(location, hashed_view(table, writer), writer)
    if format != "parquet":
        raise ValueError(f"cannot read a stored {format!r} materialisation (parquet or delta)")
    table, notes = _read_parquet(location, storage_options or {})
    writer = notes.get("ubunye.writer")
    return StoredTable(location, hashed_view(table, writer), writer)


def _read_parquet(location: str, storage_options: Mapping[str, Any]) -> tuple[pa.Table, dict]:
    """The Parquet file or folder at ``location`` and its writer's notes."""
    import pyarrow.parquet as pq
    from fsspec.core import url_to_fs

    fs, path = url_to_fs(location, **dict(storage_options))
    try:
        stored = fs.exists(path)
    except Exception as exc:  # whatever the store's client raises: credentials, endpoint
        raise OSError(f"cannot read {location}: {exc} ({type(exc).__name__})") from exc
    if not stored:
        raise FileNotFoundError(f"nothing is stored at {location}")
    table = pq.read_table(path, filesystem=fs)
    notes = footer_notes(table.schema)
    if not notes and fs.isdir(path):
        sidecar = f"{path.rstrip('/')}/{SIDECAR_NAME}"
        if fs.exists(sidecar):
            with fs.open(sidecar, "r") as handle:
                notes = dict(json.load(handle))
    return table, notes
