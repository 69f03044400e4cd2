"""Parquet files on any UPath, one per output or partition, through the frame handlers.

Paths follow Dagster's ``UPathIOManager``: ``<base_path>/<asset key parts>.parquet`` for an
unpartitioned asset and ``<base_path>/<asset key parts>/<partition>.parquet`` for a partition
(a multi-partition key is its dimension keys, ordered by dimension name, as folders). Spark
writes the same path as a folder of part files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

from ubunye_core.materialisations.stored import WRITER_KEY
from ubunye_core.paths import is_local
from ubunye_core.store import encode_name
from ubunye_dagster.io.handlers import FrameHandler, arrow_files, handler_for_kind, handler_for_type
from ubunye_dagster.io.handlers.base import StagedWrite
from ubunye_dagster.io.handlers.delta import is_delta_table, load_delta_table
from ubunye_dagster.io.storage.base import Part, ReadRequest, Storage, StoredRead
from ubunye_dagster.receipts.materialisations import stored_at

EXTENSION = ".parquet"
_PLAIN_SEGMENT = re.compile(r"^[A-Za-z0-9_=+@,-][A-Za-z0-9_.=+@,-]*$")


def path_segment(text: str) -> str:
    """A key part or partition key as one safe path segment (odd ones name-encoded)."""
    text = str(text)
    return text if _PLAIN_SEGMENT.match(text) and text not in (".", "..") else encode_name(text)


def partition_parts(partition_key: str) -> list[str]:
    """Folders/file name of a partition: one, or a multi-partition key's dimension keys in
    dimension-name order (as ``UPathIOManager`` lays them out)."""
    by_dimension = getattr(partition_key, "keys_by_dimension", None)
    if by_dimension:
        return [path_segment(by_dimension[name]) for name in sorted(by_dimension)]
    return [path_segment(partition_key)]


class FileStorage(Storage):
    """Each part a Parquet file (a folder of part files for Spark) under ``base_path``."""

    def __init__(
        self, base_path: str, storage_options: Mapping[str, Any], handlers: list[FrameHandler]
    ):
        self.base_path = base_path
        self.storage_options = dict(storage_options)
        self._handlers = handlers
        self._base: tuple[str, Any] | None = None

    def handlers(self) -> list[FrameHandler]:
        return self._handlers

    def base(self) -> Any:
        """``base_path`` as a UPath (absolute when local: made again when the working directory
        a relative one is taken from changes)."""
        from upath import UPath

        working_dir = os.getcwd()
        if self._base is not None and self._base[0] == working_dir:
            return self._base[1]
        base = UPath(self.base_path, **self.storage_options)
        if is_local(base):
            base = UPath(os.path.abspath(base.path))
        self._base = (working_dir, base)
        return base

    def under_base(self, key_path: Sequence[str], suffix: str, partition_key: Any = None) -> Any:
        """``<base_path>/<key parts>[/<partition parts>]<suffix>``."""
        segments = [path_segment(part) for part in key_path]
        if partition_key is not None:
            segments += partition_parts(partition_key)
        segments[-1] += suffix
        return self.base().joinpath(*segments)

    def path(self, part: Part) -> Any:
        """Where ``part``'s Parquet is kept."""
        return self.under_base(part.key_path, EXTENSION, part.partition_key)

    def stored_path(self, location: str) -> Any:
        """A location an external writer stated, as a UPath with this storage's options."""
        from upath import UPath

        return UPath(location, **self.storage_options)

    def stage(self, part: Part, handler: FrameHandler, obj: Any, context: Any) -> StagedWrite:
        return handler.stage(obj, part.slice_at(self.path(part)), context)

    def read(self, context: dg.InputContext, request: ReadRequest) -> StoredRead:
        written_at = stored_at(request.latest)  # written elsewhere, where its receipt says
        if written_at is None:
            return self.read_at(self.path(request.part), context, request)
        path = self.stored_path(written_at)
        if is_delta_table(path):
            args = (self._handlers, context, request.wanted, self.storage_options)
            return StoredRead.by(*load_delta_table(request.part.slice_at(path), *args), path)
        return self.read_at(path, context, request)

    def read_at(self, path: Any, context: Any, request: ReadRequest) -> StoredRead:
        """The Parquet at ``path`` read by the handler of the type wanted, else of its writer."""
        wanted = request.wanted
        handler = handler_for_type(self._handlers, wanted) if wanted is not None else None
        if handler is None:
            writer = arrow_files.stored_writer_notes(path).get(WRITER_KEY)
            handler = handler_for_kind(self._handlers, writer) or self._handlers[0]
        where = request.part.slice_at(path)
        loaded = handler.load(where, context, wanted, digest_with=request.digest_with)
        return StoredRead.by(handler, loaded, path)
