"""Parquet on a UPath through Arrow, written atomically, for the pandas, pyarrow, polars handlers.

Local: the file is written beside its target under a hidden temporary name and renamed over it
(one atomic rename). Object stores: the file is built in memory and sent with one put, so a reader
sees the old object or the new one, never part of one.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ubunye_core.hashing import fingerprint, fingerprint_arrow
from ubunye_core.hashing.fingerprint import failed_fingerprint
from ubunye_core.staging import remove_dead_staging, staging_name
from ubunye_core.stored import footer_notes, hashed_view, pandas_view
from ubunye_dagster.handlers.base import SIDECAR_NAME

__all__ = ["footer_notes", "hashed_view", "pandas_view"]

#: Columns pandas adds for an unnamed index; they are not the asset's columns.
INDEX_PREFIX = "__index_level_"


def is_local(path: Any) -> bool:
    """True when ``path`` (a UPath) is on the local file system."""
    return getattr(path, "protocol", "") in ("", "file", "local")


def native_path(path: Any) -> str:
    """The path as its file system names it (an absolute path locally, bucket/key remotely)."""
    return str(path) if is_local(path) else path.path


def temporary_sibling(path: Any) -> Any:
    """A fresh hidden name in the same folder as ``path``, for staging a write; the name says
    which process stages it (``ubunye_core.staging``)."""
    return path.parent / staging_name(path.name)


def staging_folder(path: Any) -> Any:
    """A fresh hidden folder beside ``path``, to stage a write at ``<folder>/<path.name>``.

    Whoever lists the parent (Spark, pyarrow datasets) skips the hidden folder; the staged name
    inside it is not hidden, so Spark reads it back without ignoring it.
    """
    return path.parent / staging_name("stage")


def _write_parquet(table: pa.Table, sink: Any) -> None:
    """Write ``table`` as Parquet to ``sink`` (a path or a file object)."""
    pq.write_table(table, sink)


def with_notes(table: pa.Table, notes: Mapping[str, str]) -> pa.Table:
    """``table`` with ``notes`` added to its schema metadata (kept in the Parquet footer)."""
    metadata = dict(table.schema.metadata or {})
    metadata.update({key.encode(): str(value).encode() for key, value in notes.items()})
    return table.replace_schema_metadata(metadata)


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


def replace_local(staged: str, final: str) -> None:
    """Move ``staged`` to ``final`` on one local file system, replacing what is there.

    A file replaces a file in one atomic rename. A folder cannot be renamed over a folder, so the
    old one is first moved aside (both renames are atomic), then deleted.
    """
    if os.path.isdir(final):
        aside = os.path.join(os.path.dirname(final), staging_name("old"))
        os.rename(final, aside)
        try:
            os.rename(staged, final)
        except BaseException:
            os.rename(aside, final)
            raise
        import shutil

        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.replace(staged, final)


def write_table_atomically(table: pa.Table, path: Any, notes: Mapping[str, str]) -> None:
    """Write ``table`` as one Parquet file at ``path``; a failure leaves the previous one intact."""
    table = with_notes(table, notes)
    if is_local(path):
        final = str(path)
        os.makedirs(os.path.dirname(final), exist_ok=True)
        staged = str(temporary_sibling(path))
        try:
            _write_parquet(table, staged)
            replace_local(staged, final)
        except BaseException:
            if os.path.exists(staged):
                os.remove(staged)
            raise
        sweep_dead_staging(path)
        return
    buffer = io.BytesIO()
    _write_parquet(table, buffer)
    fs = path.fs
    if fs.exists(path.path) and fs.isdir(path.path):
        fs.rm(path.path, recursive=True)  # an earlier folder-shaped (Spark) materialisation
    fs.makedirs(path.parent.path, exist_ok=True)
    fs.pipe_file(path.path, buffer.getvalue())


def sweep_dead_staging(path: Any) -> list[str]:
    """Remove what killed writers staged beside ``path``; a live writer's entry stays. A sweep
    that fails (a read-only listing, a race) never fails the write that asked for it."""
    try:
        return remove_dead_staging(path.fs, native_path(path.parent))
    except OSError:
        return []


def read_table(path: Any) -> pa.Table:
    """The Parquet file, or folder of part files, at ``path`` as one Arrow table."""
    if is_local(path):
        if not os.path.exists(str(path)):
            raise FileNotFoundError(f"no materialisation at {path}")
        return pq.read_table(str(path))
    if not path.fs.exists(path.path):
        raise FileNotFoundError(f"no materialisation at {path}")
    return pq.read_table(path.path, filesystem=path.fs)


def stored_notes(table: pa.Table, path: Any) -> dict[str, str]:
    """What the writer left beside the data: Parquet footer metadata, or a folder's sidecar."""
    return footer_notes(table.schema) or read_sidecar(path)


def read_sidecar(path: Any) -> dict[str, str]:
    """The sidecar notes of a folder-shaped materialisation; empty when there are none.

    Whether it is there is asked first: file systems report a missing file under a file in
    their own ways (``memory://`` raises FileExistsError, local NotADirectoryError).
    """
    sidecar = path / SIDECAR_NAME
    try:
        if is_local(path):
            with open(str(sidecar), encoding="utf-8") as handle:
                return dict(json.load(handle))
        if not sidecar.fs.isfile(sidecar.path):
            return {}
        with sidecar.fs.open(sidecar.path, "r") as handle:
            return dict(json.load(handle))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, ValueError):
        return {}


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
    """The writer's notes: a folder's sidecar, or a single file's Parquet footer."""
    notes = read_sidecar(path)
    if notes:
        return notes
    try:
        import pyarrow.parquet as pq

        if is_local(path):
            schema = pq.read_schema(str(path))
        else:
            with path.fs.open(path.path, "rb") as handle:
                schema = pq.read_schema(handle)
    except Exception:  # a folder without sidecar, or not Parquet: nothing is known
        return {}
    return footer_notes(schema)
