"""Another IO manager's storage: it stores and loads the objects, the rows are hashed in memory,
or, for a warehouse's tables, in the database.

A write's object is checked before it is handed to the inner IO manager and hashed before it
(in memory) or after it (in the warehouse: the table or partition slice the inner stored); a
read's object is whatever the inner IO manager loads (several partitions at once, when it loads
them so), hashed after it is loaded (in the warehouse: the slice the writer stated).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import dagster as dg

from ubunye_dagster.io.handlers import FrameHandler, LoadedFrame, StagedWrite, default_handlers
from ubunye_dagster.io.handlers.base import ReceiptRows, Rows
from ubunye_dagster.io.storage.base import Part, ReadRequest, Storage, StoredRead
from ubunye_dagster.io.storage.warehouse_tables import StatedTable, metadata_text
from ubunye_dagster.receipts.materialisations import Materialised
from ubunye_dagster.receipts.metadata import URI
from ubunye_dagster.warehouse.settings import AnyWarehouse


def stated_location(metadata: Mapping[str, Any], kind: str | None = None) -> str | None:
    """Where output metadata says the data is: a URI or path as stated, a table as
    ``<storage kind>:<table>`` (``duckdb:warehouse.duckdb.shop.orders``), the kind from
    ``kind`` when the metadata names none; None when silent."""
    found = metadata_text(metadata, URI) or metadata_text(metadata, "path")
    if found:
        return found
    table = metadata_text(metadata, "dagster/table_name") or metadata_text(metadata, "table_name")
    # Dagster 1.10's DbIOManager logs no storage kind; the warehouse the table is in is one.
    kind = metadata_text(metadata, "dagster/storage_kind") or kind
    return f"{kind}:{table}" if table and kind else table


class HandOver(StagedWrite):
    """An object hashed and checked in memory; committing hands it to the inner IO manager."""

    def __init__(
        self, rows: Rows, inner: dg.IOManager, context: Any, obj: Any, where: str, name: str
    ):
        super().__init__(where, rows)
        self.format = name
        self.inner = inner
        self.context = context
        self.obj = obj

    def commit(self, notes: Mapping[str, str]) -> ReceiptRows:
        # The inner IO manager keeps no notes of ours: reads are verified against Dagster's
        # record of the materialisation instead.
        with self.write_watch.timing():
            self.inner.handle_output(self.context, self.obj)
        metadata = self.context.get_logged_metadata()
        self.location = stated_location(metadata, self.storage_kind()) or self.location
        return self.rows

    def storage_kind(self) -> str | None:
        """The kind of storage the inner writes a table to, when the metadata names none."""
        return None

    def discard(self) -> None:
        self.obj = None  # nothing was handed over


class TableHandOver(HandOver):
    """An object checked in memory and handed to the inner IO manager; its receipt describes
    the table (or partition slice) the inner stored, hashed in the warehouse once committed."""

    def __init__(
        self,
        rows: Rows,
        inner: dg.IOManager,
        context: Any,
        obj: Any,
        where: str,
        name: str,
        *,
        warehouse: AnyWarehouse,
        partitioned: bool,
    ):
        """As a :class:`HandOver`, hashed in ``warehouse`` once stored; ``partitioned`` when it
        is one partition (its slice must be stated)."""
        super().__init__(rows, inner, context, obj, where, name)
        self.warehouse = warehouse
        self.partitioned = partitioned

    def hashed_as_staged(self) -> None:
        return None  # the receipt describes the stored table, known once committed

    def commit(self, notes: Mapping[str, str]) -> StatedTable:
        super().commit(notes)
        metadata = self.context.get_logged_metadata()
        stated_by = f"{self.format}'s output metadata"
        return StatedTable(metadata, self.warehouse, self.partitioned, stated_by)

    def storage_kind(self) -> str | None:
        return self.warehouse.kind


@dataclass(frozen=True)
class PreloadedPart(Part):
    """A part whose object the inner IO manager has already loaded."""

    frame: Any = None
    read_seconds: float = 0.0
    #: False when the object holds several partitions at once (no single recorded digest).
    verifiable: bool = True


class InnerIOManagerStorage(Storage):
    """Rows stored and loaded by ``inner`` (an initialised IO manager), named ``name`` in
    receipts; several partitions it loads as one mapping are read as one part each."""

    # The partitions' own input steps are the record: the mapping is the inner IO manager's.
    combines_partition_reads = False

    def __init__(
        self,
        inner: dg.IOManager,
        name: str,
        spark_resource_key: str | None,
        warehouse: AnyWarehouse | None = None,
    ):
        self.inner = inner
        self.name = name
        self.warehouse = warehouse
        self._handlers = default_handlers(spark_resource_key)

    def handlers(self) -> list[FrameHandler]:
        return self._handlers

    def stage(self, part: Part, handler: FrameHandler, obj: Any, context: Any) -> StagedWrite:
        """``obj``'s rows in memory, handed to the inner IO manager on commit."""
        args = (handler.rows_of(obj), self.inner, context, obj, self.where(part), self.name)
        if self.warehouse is None:
            return HandOver(*args)
        partitioned = part.partition_key is not None
        return TableHandOver(*args, warehouse=self.warehouse, partitioned=partitioned)

    def where(self, part: Part) -> str:
        """Where the inner IO manager keeps a part, until it states it (``Name:a/b[/p]``)."""
        extra = [] if part.partition_key is None else [str(part.partition_key)]
        return f"{self.name}:{'/'.join([*part.key_path, *extra])}"

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
        location = self.input_location(part, request.latest)
        loaded = self.loaded(handler, part, request)
        return StoredRead(handler.kind, self.name, loaded, location, part.verifiable)

    def loaded(
        self, handler: FrameHandler, part: PreloadedPart, request: ReadRequest
    ) -> LoadedFrame:
        """The object the inner loaded, hashed in the warehouse (the slice its writer stated)
        or in memory. The inner's storage has no bytes of ours to digest: rows are hashed."""
        stated, stated_by = self.stated(part, request)
        if stated is not None:
            partitioned = part.partition_key is not None
            rows: ReceiptRows = StatedTable(stated, self.warehouse, partitioned, stated_by)
            basis = "recomputed"  # the table is read again, in the database
        else:
            rows = handler.rows_of(part.frame)
            basis = "materialised" if handler.kind != "spark" else "recomputed"
        return LoadedFrame(
            frame=part.frame,
            read_seconds=part.read_seconds,
            fingerprint=rows.fingerprint,
            hash_basis=basis,
        )

    def input_location(self, part: Part, latest: Materialised | None) -> str:
        """Where the writer's receipt says the input is, else where the inner keeps it."""
        kind = self.warehouse.kind if self.warehouse is not None else None
        stated = stated_location(latest.metadata, kind) if latest is not None else None
        return stated or self.where(part)

    def stated(self, part: Part, request: ReadRequest) -> tuple[Mapping[str, Any] | None, str]:
        """What the writer's materialisation states (empty when Dagster has none) and whose it
        is, for a part hashed in the warehouse; None when it is hashed in memory (no warehouse,
        or several partitions loaded as one object, which no single stated slice holds)."""
        if self.warehouse is None or not part.verifiable:
            return None, ""
        latest = request.latest
        if latest is None:
            return {}, f"Dagster (it records no materialisation of {part.name})"
        return dict(latest.metadata), f"the materialisation of {part.name} in Dagster"
