"""pandas, pyarrow and polars frames stored as Delta Lake tables: every write a new version.

One table per asset. A partition's write replaces only the rows its predicate selects (the
slice's ``partition_expr``, the asset's metadata, names the column holding the partition key, as
in dagster-deltalake), so the other partitions stay. The step's ``source_version`` names the table
version written, so a diff can read that version back later.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from ubunye_core.materialisations.delta import (
    commit_history,
    commit_info,
    commit_notes,
    equals_predicate,
    latest_version,
    newest_own_write,
    read_delta_version,
    write_delta,
)
from ubunye_core.materialisations.stored import DATA_HASH_KEY, SCHEMA_HASH_KEY, WRITER_KEY
from ubunye_core.paths import is_local
from ubunye_dagster.io.handlers import arrow_files, handler_for_kind, handler_for_type
from ubunye_dagster.io.handlers.arrow_backed import ArrowBackedHandler, ArrowRows
from ubunye_dagster.io.handlers.base import (
    PARTITION_EXPR,
    FrameHandler,
    LoadedFrame,
    StagedWrite,
    TableSlice,
)


def partition_predicate(where: TableSlice) -> str | None:
    """The SQL predicate selecting one partition's rows; None for an unpartitioned asset."""
    partition_key, expr = where.partition_key, where.partition_expr
    if partition_key is None:
        return None
    by_dimension = getattr(partition_key, "keys_by_dimension", None)
    if by_dimension is not None:
        if not isinstance(expr, Mapping) or set(expr) != set(by_dimension):
            raise ValueError(
                f"a multi-partitioned Delta asset needs metadata {PARTITION_EXPR!r} mapping each "
                f"dimension {sorted(by_dimension)} to its column"
            )
        return " AND ".join(
            equals_predicate(str(expr[dim]), str(by_dimension[dim])) for dim in sorted(expr)
        )
    if not isinstance(expr, str) or not expr:
        raise ValueError(
            f"a partitioned Delta asset needs metadata {PARTITION_EXPR!r} naming the column that "
            "holds the partition key, so one partition's rows can be replaced"
        )
    return equals_predicate(expr, str(partition_key))


class DeltaStagedWrite(StagedWrite):
    """An Arrow table waiting to become the next version of a Delta table (or of its partition)."""

    format = "delta"

    def __init__(
        self,
        table: Any,
        path: Any,
        writer: str,
        predicate: str | None,
        storage_options: Mapping[str, Any],
    ):
        # Delta keeps no pandas metadata: an unnamed index is not stored, as rows-v1 ignores it.
        table = arrow_files.without_index_columns(table).replace_schema_metadata(None)
        super().__init__(str(path), ArrowRows(table, writer))
        self.predicate = predicate
        self.storage_options = dict(storage_options)
        self.version: int | None = None
        self.committed_at: str | None = None

    def commit(self, notes: Mapping[str, str]) -> ArrowRows:
        with self.write_watch.timing():
            self.version = write_delta(
                self.rows.table,
                self.location,
                predicate=self.predicate,
                notes=notes,
                storage_options=self.storage_options,
            )
        self.committed_at = datetime.now(timezone.utc).isoformat()
        return self.rows

    def discard(self) -> None:
        self.rows = ArrowRows(None, self.rows.writer)  # nothing was written: memory freed

    def source_version(self) -> dict[str, Any] | None:
        """What the step records as its source version: the Delta version this write made."""
        if self.version is None:
            return None
        return {
            "kind": "delta",
            "version": self.version,
            "timestamp": self.committed_at,
            "predicate": self.predicate,
        }


class DeltaHandler(FrameHandler):
    """One Arrow-backed frame library (pandas, pyarrow, polars) stored as Delta tables."""

    storage = "delta"

    def __init__(self, inner: ArrowBackedHandler, storage_options: Mapping[str, Any]):
        self.inner = inner
        self.kind = inner.kind
        self.backend = inner.backend
        self.storage_options = dict(storage_options)

    def accepts_type(self, cls: type) -> bool:
        return self.inner.accepts_type(cls)

    def rows_of(self, obj: Any) -> ArrowRows:
        return self.inner.rows_of(obj)

    def stage(self, obj: Any, where: TableSlice, context: Any) -> StagedWrite:
        """Stage ``obj`` as the next version of the table (of the slice's partition's rows)."""
        predicate = partition_predicate(where)
        table = self.inner.to_arrow(obj)
        return DeltaStagedWrite(table, where.location, self.kind, predicate, self.storage_options)

    def load(
        self, where: TableSlice, context: Any, as_type: Any = None, digest_with: str | None = None
    ) -> LoadedFrame:
        """The latest version of the table (the slice's partition's rows) as this handler's
        frame, hashed under its writer's rules. A Delta table keeps no byte digest: its reads
        are proven by hashing the rows."""
        path = where.location
        predicate = partition_predicate(where)
        started = time.perf_counter()
        commits = commit_history(str(path), self.storage_options)
        version = int(commits[0]["version"]) if commits else latest_version(str(path))
        table = read_delta_version(str(path), version, self.storage_options, predicate)
        # The digest our newest write of these rows recorded: any later commit must keep them.
        notes = commit_notes(newest_own_write(commits, predicate))
        frame = self.inner.from_arrow(table, as_type)
        writer = notes.get(WRITER_KEY)
        return LoadedFrame(
            frame=frame,
            read_seconds=time.perf_counter() - started,
            fingerprint=lambda: arrow_files.fingerprint_stored(table, writer),
            hash_basis="materialised",
            writer=writer,
            stored_data_hash=notes.get(DATA_HASH_KEY),
            stored_schema_hash=notes.get(SCHEMA_HASH_KEY),
            source_version={"kind": "delta", "version": version, "predicate": predicate},
        )


def delta_handlers(
    handlers: Sequence[FrameHandler], storage_options: Mapping[str, Any]
) -> list[FrameHandler]:
    """``handlers`` with every Arrow-backed one storing Delta tables (Spark keeps Parquet)."""
    return [
        DeltaHandler(handler, storage_options)
        if isinstance(handler, ArrowBackedHandler)
        else handler
        for handler in handlers
    ]


def is_delta_table(path: Any) -> bool:
    """True when a Delta table (its ``_delta_log``) is at ``path`` (a UPath)."""
    log = path / "_delta_log"
    return bool(log.fs.exists(log.path if not is_local(log) else str(log)))


def delta_writer(path: Any, storage_options: Mapping[str, Any]) -> str | None:
    """Who wrote the newest version of the Delta table at ``path``."""
    version = latest_version(str(path), storage_options)
    return commit_notes(commit_info(str(path), version, storage_options)).get(WRITER_KEY)


def load_delta_table(
    where: TableSlice,
    handlers: Sequence[FrameHandler],
    context: Any,
    wanted: Any,
    storage_options: Mapping[str, Any],
) -> tuple[DeltaHandler, LoadedFrame]:
    """The Delta table of ``where`` loaded by the handler of ``wanted``, else of its
    writer; TypeError when that handler reads Parquet, not Delta tables."""
    handler = handler_for_type(handlers, wanted) if wanted is not None else None
    if handler is None:
        writer = delta_writer(where.location, storage_options)
        handler = handler_for_kind(handlers, writer) or handlers[0]
    if not isinstance(handler, DeltaHandler):
        raise TypeError(f"{where.location} is a Delta table; {handler.kind} frames read Parquet")
    return handler, handler.load(where, context, wanted)
