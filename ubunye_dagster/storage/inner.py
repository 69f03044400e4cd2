"""Another IO manager's storage: it stores and loads the objects, the rows are hashed in memory.

A write's object is hashed and checked before it is handed to the inner IO manager; a read's
object is whatever the inner IO manager loads (several partitions at once, when it loads them
so), hashed after it is loaded.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import dagster as dg

from ubunye_dagster.handlers import FrameHandler, LoadedFrame, StagedWrite, default_handlers
from ubunye_dagster.handlers.arrow_backed import ArrowBackedHandler, ArrowRows
from ubunye_dagster.handlers.base import RowsOf, TableSlice
from ubunye_dagster.handlers.pyspark import SparkRows
from ubunye_dagster.metadata import URI
from ubunye_dagster.storage.base import Part, ReadRequest, Storage, StoredRead


def stated_location(metadata: Mapping[str, Any]) -> str | None:
    """Where output metadata says the data is: a URI or path as stated, a table as
    ``<storage kind>:<table>`` (``duckdb:warehouse.duckdb.shop.orders``); None when silent."""

    def text(key: str) -> str | None:
        value = metadata.get(key)
        return None if value is None else str(getattr(value, "value", value))

    found = text(URI) or text("path")
    if found:
        return found
    table = text("dagster/table_name") or text("table_name")
    kind = text("dagster/storage_kind")
    return f"{kind}:{table}" if table and kind else table


def rows_in_memory(handler: FrameHandler, obj: Any) -> Any:
    """A frame's rows as the hash and the rules see them (``fingerprint``, ``schema_pairs``,
    ``rule_counter``), without storing anything."""
    if isinstance(handler, ArrowBackedHandler):
        return ArrowRows(handler.to_arrow(obj), handler.kind)
    return SparkRows(obj)  # Spark: the DataFrame itself, hashed and counted where it lives


class HandOver(RowsOf, StagedWrite):
    """An object hashed and checked in memory; committing hands it to the inner IO manager."""

    def __init__(
        self, rows: Any, inner: dg.IOManager, context: Any, obj: Any, where: str, name: str
    ):
        super().__init__(location=where)
        self.format = name
        self.rows = rows
        self.inner = inner
        self.context = context
        self.obj = obj

    def commit(self, notes: Mapping[str, str]) -> None:
        # The inner IO manager keeps no notes of ours: reads are verified against Dagster's
        # record of the materialisation instead.
        with self.write_watch.timing():
            self.inner.handle_output(self.context, self.obj)
        self.location = stated_location(self.context.get_logged_metadata()) or self.location

    def discard(self) -> None:
        self.obj = None  # nothing was handed over


@dataclass
class Preloaded:
    """An object the inner IO manager loaded, standing where a path stands for a Parquet read."""

    frame: Any
    location: str
    read_seconds: float

    def __str__(self) -> str:
        return self.location


@dataclass(frozen=True)
class PreloadedPart(Part):
    """A part whose object the inner IO manager has already loaded."""

    frame: Any = None
    read_seconds: float = 0.0
    #: False when the object holds several partitions at once (no single recorded digest).
    verifiable: bool = True


class InnerStorageHandler(FrameHandler):
    """One frame library's rows, stored and loaded by the inner IO manager instead of as
    Parquet: staging hashes them in memory, loading hashes what the inner IO manager loaded."""

    def __init__(self, frames: FrameHandler, inner: dg.IOManager, name: str):
        self.frames = frames
        self.inner = inner
        self.kind = frames.kind
        self.backend = frames.backend
        self.storage = name

    def accepts_type(self, cls: type) -> bool:
        return self.frames.accepts_type(cls)

    def stage(self, obj: Any, where: TableSlice, context: Any) -> StagedWrite:
        rows = rows_in_memory(self.frames, obj)
        return HandOver(rows, self.inner, context, obj, str(where.location), self.storage)

    def load(
        self, where: TableSlice, context: Any, as_type: Any = None, digest_with: str | None = None
    ) -> LoadedFrame:
        # The inner IO manager's storage has no bytes of ours to digest: rows are always hashed.
        preloaded = where.location
        rows = rows_in_memory(self.frames, preloaded.frame)
        return LoadedFrame(
            frame=preloaded.frame,
            read_seconds=preloaded.read_seconds,
            fingerprint=rows.fingerprint,
            hash_basis="materialised" if self.kind != "spark" else "recomputed",
        )


class InnerIOManagerStorage(Storage):
    """Rows stored and loaded by ``inner`` (an initialised IO manager), named ``name`` in
    receipts; several partitions it loads as one mapping are read as one part each."""

    # The partitions' own input steps are the record: the mapping is the inner IO manager's.
    combines_partition_reads = False

    def __init__(self, inner: dg.IOManager, name: str, spark_resource_key: str | None):
        self.inner = inner
        self.name = name
        self._handlers = [
            InnerStorageHandler(frames, inner, name)
            for frames in default_handlers(spark_resource_key)
        ]

    def handlers(self) -> list[FrameHandler]:
        return self._handlers

    def where(self, part: Part) -> str:
        """Where the inner IO manager keeps a part, until it states it (``Name:a/b[/p]``)."""
        extra = [] if part.partition_key is None else [str(part.partition_key)]
        return f"{self.name}:{'/'.join([*part.key_path, *extra])}"

    def slice_of(self, part: Part, handler: FrameHandler) -> TableSlice:
        return part.slice_at(self.where(part))

    def fetch(self, context: dg.InputContext, parts: list[Part]) -> list[Part]:
        """The input loaded once by the inner IO manager: a part per partition of the mapping it
        returns for several partitions, else one part holding the whole object."""
        started = time.perf_counter()
        loaded = self.inner.load_input(context)
        seconds = round(time.perf_counter() - started, 6)
        keys = [part.partition_key for part in parts if part.partition_key is not None]
        if len(keys) > 1 and isinstance(loaded, Mapping) and set(loaded) <= set(keys):
            by_key = {part.partition_key: part for part in parts}
            return [
                PreloadedPart(**vars(by_key[key]), frame=frame, read_seconds=seconds)
                for key, frame in loaded.items()
            ]
        whole = replace(
            parts[0],
            partition_key=keys[0] if len(keys) == 1 else None,
            name=context.name,
            one_of_several=False,
        )
        verifiable = len(keys) <= 1
        return [
            PreloadedPart(**vars(whole), frame=loaded, read_seconds=seconds, verifiable=verifiable)
        ]

    def read(self, context: dg.InputContext, request: ReadRequest) -> StoredRead:
        part = request.part
        handler = next((h for h in self._handlers if h.accepts(part.frame)), None)
        if handler is None:
            raise TypeError(
                f"{self.name} loaded a {type(part.frame).__name__}, which rows-v1 "
                "cannot hash (pandas, pyarrow, polars or Spark frames)"
            )
        where = Preloaded(part.frame, self.input_location(part, request.latest), part.read_seconds)
        loaded = handler.load(part.slice_at(where), context, request.wanted)
        return StoredRead(handler, loaded, where, verifiable=part.verifiable)

    def input_location(self, part: Part, latest: dg.EventLogRecord | None) -> str:
        """Where the writer's receipt says the input is, else where the inner keeps it."""
        materialization = latest.asset_materialization if latest is not None else None
        stated = stated_location(materialization.metadata) if materialization else None
        return stated or self.where(part)
