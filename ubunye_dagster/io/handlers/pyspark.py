"""Spark DataFrames: written by Spark into a temporary folder, hashed there, renamed into place.

The hash and the expectations read the files Spark wrote (one more scan), never the DataFrame the
asset returned, so the asset's transform runs once. The SparkSession is the one of a
``dagster-pyspark`` ``PySparkResource`` when the step has one under the configured key, else the
active session.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any

from ubunye_core.materialisations.byte_digest import bytes_digest, folder_digest
from ubunye_core.materialisations.removals import replace_local
from ubunye_core.materialisations.stored import (
    DATA_HASH_KEY,
    SCHEMA_HASH_KEY,
    SIDECAR_NAME,
    WRITER_KEY,
)
from ubunye_core.paths import is_local
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.io.handlers import arrow_files
from ubunye_dagster.io.handlers.base import (
    FrameHandler,
    LoadedFrame,
    RowsView,
    StagedWrite,
    Stopwatch,
    TableSlice,
    type_is,
)
from ubunye_rows.hashing import fingerprint
from ubunye_rows.hashing.digest import Fingerprint
from ubunye_rows.hashing.spark import spark_schema_pairs

#: Timestamps written as UTC instants in microseconds, so Arrow readers see ``timestamp[us, UTC]``
#: (the legacy INT96 encoding reads back as a naive time, another type under rows-v1).
_TIMESTAMP_TYPE_CONF = "spark.sql.parquet.outputTimestampType"


def spark_uri(path: Any) -> str:
    """The path as Spark names it: an absolute local path, or the URL for an object store."""
    return str(path)


@contextmanager
def session_conf(spark: Any, key: str, value: str) -> Iterator[None]:
    """Set one Spark session setting for the block, then put back what was there."""
    previous = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, previous)


def session_for(context: Any, resource_key: str | None) -> Any:
    """The step's ``PySparkResource`` session under ``resource_key``, else the active session."""
    if resource_key:
        resource = internals.step_resource(context, resource_key)
        session = getattr(resource, "spark_session", None)
        if session is not None:
            return session
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    return SparkSession.builder.getOrCreate()


class SparkRows:
    """A Spark DataFrame's rows for the receipt: hashed once, their schema, their view."""

    def __init__(self, df: Any):
        self.df = df
        self._fingerprint: Fingerprint | None = None

    def fingerprint(self) -> Fingerprint:
        if self._fingerprint is None:
            self._fingerprint = fingerprint(self.df)
        return self._fingerprint

    def schema_pairs(self) -> list[tuple[str, str]]:
        return spark_schema_pairs(self.df)

    def rows_view(self) -> RowsView:
        # The hash already counted the rows: no second Spark job for the total.
        total = self._fingerprint.row_count if self._fingerprint is not None else None
        return RowsView("spark", self.df, dict(self.schema_pairs()), total)


class SparkStagedWrite(StagedWrite):
    """Rows Spark has written under a hidden folder beside the target, read back for the hash.

    The rows go to ``<hidden folder>/<target name>``: Spark ignores a path whose own name starts
    with ``.`` or ``_``, so the folder it writes and reads is named like the target, while the
    hidden folder around it keeps it out of every listing of the target's parent.
    """

    def __init__(self, df: Any, path: Any):
        self.path = path
        self.staging = arrow_files.staging_folder(path)
        self.staged = self.staging / path.name
        watch = Stopwatch()
        spark = df.sparkSession
        try:
            with watch.timing(), session_conf(spark, _TIMESTAMP_TYPE_CONF, "TIMESTAMP_MICROS"):
                df.write.mode("error").parquet(spark_uri(self.staged))
            self.written = spark.read.parquet(spark_uri(self.staged))
        except BaseException:
            self.discard()  # a job that failed midway leaves part files in the staging folder
            raise
        super().__init__(str(path), SparkRows(self.written))
        self.write_watch = watch

    def commit(self, notes: Mapping[str, str]) -> SparkRows:
        with self.write_watch.timing():
            self.bytes_hash = folder_digest(self.staged.fs, arrow_files.native_path(self.staged))
            sidecar = self.staged / SIDECAR_NAME
            sidecar.write_text(json.dumps(dict(notes), sort_keys=True))
            if is_local(self.path):
                replace_local(str(self.staged), str(self.path))
            else:
                # An object store has no atomic folder rename: the old folder goes, then the
                # new one is moved in. A reader in between finds no data, never mixed data.
                arrow_files.remove_path(self.path)
                self.staged.fs.mv(self.staged.path, self.path.path, recursive=True)
        # The rows are in place: an empty hidden folder that cannot go now harms no reader.
        with suppress(OSError):
            arrow_files.remove_path(self.staging)
        arrow_files.sweep_dead_staging(self.path)
        return self.rows

    def discard(self) -> None:
        arrow_files.remove_path(self.staging)


class SparkHandler(FrameHandler):
    """Spark DataFrames (classic and Connect), stored as a folder of Parquet part files."""

    kind = "spark"
    backend = "spark"

    def __init__(self, resource_key: str | None = "pyspark"):
        self.resource_key = resource_key

    def accepts_type(self, cls: type) -> bool:
        return type_is(cls, "pyspark", ("DataFrame",))

    def rows_of(self, obj: Any) -> SparkRows:
        return SparkRows(obj)  # the DataFrame itself, hashed and counted where it lives

    def stage(self, obj: Any, where: TableSlice, context: Any) -> StagedWrite:
        return SparkStagedWrite(obj, where.location)

    def load(
        self, where: TableSlice, context: Any, as_type: Any = None, digest_with: str | None = None
    ) -> LoadedFrame:
        path = where.location
        spark = session_for(context, self.resource_key)
        started = time.perf_counter()
        if is_local(path) and not path.exists():
            raise FileNotFoundError(f"no materialisation at {path}")
        df = spark.read.parquet(spark_uri(path))
        index_columns = [name for name in df.columns if name.startswith(arrow_files.INDEX_PREFIX)]
        if index_columns:
            df = df.drop(*index_columns)
        notes = arrow_files.stored_writer_notes(path)
        seconds = time.perf_counter() - started
        writer = notes.get(WRITER_KEY)
        bytes_hash, bytes_seconds = stored_bytes_digest(path, digest_with)
        return LoadedFrame(
            frame=df,
            read_seconds=seconds,
            fingerprint=lambda: fingerprint(df),
            hash_basis="recomputed",
            writer=writer,
            stored_data_hash=notes.get(DATA_HASH_KEY),
            stored_schema_hash=notes.get(SCHEMA_HASH_KEY),
            same_rules_as_writer=writer in (None, "spark"),
            bytes_hash=bytes_hash,
            bytes_seconds=bytes_seconds,
        )


def stored_bytes_digest(path: Any, algorithm: str | None) -> tuple[str | None, float]:
    """The digest of the stored file or folder at ``path`` and its seconds; (None, 0) when no
    algorithm is asked for. Spark reads lazily, so this is taken when the step loads the input."""
    if algorithm is None:
        return None, 0.0
    started = time.perf_counter()
    fs = path.fs
    native = arrow_files.native_path(path)
    if fs.isdir(native):
        digest = folder_digest(fs, native, algorithm)
    else:
        digest = bytes_digest(fs.cat_file(native), algorithm)
    return digest, time.perf_counter() - started
