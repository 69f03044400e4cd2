"""Delta Lake tables, one per asset, every write a new version; Spark frames keep Parquet files.

A table is kept at ``<base_path>/<key parts>.delta``; a partition is the table's rows its
``partition_expr`` selects. A read finds the table, else the Parquet a Spark writer (or an
earlier ``format="parquet"``) left at the file path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dagster as dg

from ubunye_dagster.io.handlers import FrameHandler
from ubunye_dagster.io.handlers.base import StagedWrite
from ubunye_dagster.io.handlers.delta import (
    DeltaHandler,
    delta_handlers,
    is_delta_table,
    load_delta_table,
)
from ubunye_dagster.io.storage.base import Part, ReadRequest, Storage, StoredRead
from ubunye_dagster.io.storage.files import FileStorage
from ubunye_dagster.receipts.materialisations import stored_at


class DeltaStorage(Storage):
    """Delta tables under ``base_path`` for the Arrow-backed ones of ``handlers``, Parquet files
    for the rest (Spark)."""

    def __init__(
        self, base_path: str, storage_options: Mapping[str, Any], handlers: list[FrameHandler]
    ):
        stored_as_delta = delta_handlers(handlers, storage_options)
        self.files = FileStorage(base_path, storage_options, stored_as_delta)

    def handlers(self) -> list[FrameHandler]:
        return self.files.handlers()

    def table_path(self, part: Part) -> Any:
        """Where ``part``'s Delta table is kept: ``<base_path>/<key parts>.delta``."""
        return self.files.under_base(part.key_path, ".delta")

    def stage(self, part: Part, handler: FrameHandler, obj: Any, context: Any) -> StagedWrite:
        if isinstance(handler, DeltaHandler):
            return handler.stage(obj, part.slice_at(self.table_path(part)), context)
        return self.files.stage(part, handler, obj, context)

    def read(self, context: dg.InputContext, request: ReadRequest) -> StoredRead:
        if stored_at(request.latest) is not None:  # where its writer's receipt says
            return self.files.read(context, request)
        part = request.part
        table = self.table_path(part)
        if not is_delta_table(table):
            return self.files.read_at(self.files.path(part), context, request)
        args = (self.handlers(), context, request.wanted, self.files.storage_options)
        return StoredRead.by(*load_delta_table(part.slice_at(table), *args), table)
