"""Frames that are written and read through one Arrow table (pandas, pyarrow, polars).

The table converted from the frame is the one hashed, checked and written, so the digest is of
exactly the rows stored.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, ClassVar

from ubunye_core.materialisations.stored import (
    DATA_HASH_KEY,
    SCHEMA_HASH_KEY,
    WRITER_KEY,
    read_stored,
)
from ubunye_dagster.io.handlers import arrow_files
from ubunye_dagster.io.handlers.base import (
    FrameHandler,
    LoadedFrame,
    RowsView,
    StagedWrite,
    TableSlice,
    type_is,
)
from ubunye_rows.hashing import arrow_schema_pairs
from ubunye_rows.hashing.digest import Fingerprint
from ubunye_rows.hashing.lanes import leaving_cores


class ArrowRows:
    """An Arrow table's rows as rows-v1 and the expectation rules see them, under ``writer``'s
    rules (a pandas index, naive datetimes); the view is prepared once and shared."""

    def __init__(self, table: Any, writer: str):
        self.table = table
        self.writer = writer
        self._fingerprint: Fingerprint | None = None
        self._view: Any = None

    def _hashed_view(self) -> Any:
        """The rows as rows-v1 sees them, prepared once for the hash and the schema alike."""
        if self._view is None:
            self._view = arrow_files.hashed_view(self.table, self.writer)
        return self._view

    def fingerprint(self) -> Fingerprint:
        if self._fingerprint is None:
            try:
                view = self._hashed_view()
            except Exception:  # fingerprint_stored prepares it again and says why it fails
                view = None
            self._fingerprint = arrow_files.fingerprint_stored(self.table, self.writer, view)
        return self._fingerprint

    def schema_pairs(self) -> list[tuple[str, str]]:
        try:
            table = self._hashed_view()
        except ValueError:  # an index only pandas prepares: the table's own columns
            table = arrow_files.without_index_columns(self.table)
        return arrow_schema_pairs(table)

    def rows_view(self) -> RowsView:
        table = arrow_files.without_index_columns(self.table)
        try:
            kinds = dict(self.schema_pairs())
        except Exception:  # a column type rows-v1 has no name for: Arrow's own name
            kinds = {field.name: str(field.type) for field in table.schema}
        return RowsView("arrow", table, kinds)


class RowsBesideEncoder(ArrowRows):
    """An Arrow table's rows while a Parquet encoder writes them in a thread (``encoding()`` is
    true meanwhile): hashed leaving the encoder its core."""

    def __init__(self, table: Any, writer: str, encoding: Callable[[], bool]):
        super().__init__(table, writer)
        self.encoding = encoding

    def fingerprint(self) -> Fingerprint:
        # The encoder is single-threaded: hashing on every core beside it slows it more than the
        # hash gains (bench/README.md), so it keeps its core while it runs, and no longer.
        with leaving_cores(1, while_busy=self.encoding):
            return super().fingerprint()


class ArrowStagedWrite(StagedWrite):
    """An Arrow table being written as one Parquet file beside its target (in a thread, from
    the moment it is staged, so the hash overlaps the encoding); hashed under ``writer``'s
    rules, put in place by ``commit``."""

    def __init__(self, table: Any, path: Any, writer: str):
        file = arrow_files.StagedParquetFile(table, path)
        super().__init__(str(path), RowsBesideEncoder(table, writer, file.encoding))
        self.path = path
        self._file = file

    def commit(self, notes: Mapping[str, str]) -> ArrowRows:
        notes = {**notes, **arrow_files.row_count_note(self.rows.table)}
        try:
            self.bytes_hash = self._file.finish(notes)
        finally:
            self.write_watch.seconds += self._file.seconds
        return self.rows

    def discard(self) -> None:
        self._file.abandon()
        self.rows = ArrowRows(None, self.rows.writer)  # nothing was put in place: memory freed


def load_arrow(path: Any, convert: Any, digest_with: str | None = None) -> LoadedFrame:
    """Read the Parquet at ``path`` as ``convert(table)``; it is hashed under its writer's rules.
    With ``digest_with`` the stored bytes are digested too (beside the decode)."""
    started = time.perf_counter()
    stored = read_stored(path, digest_with=digest_with)
    notes = stored.notes
    table = arrow_files.with_noted_row_count(stored.table, notes)
    frame = convert(table)
    seconds = time.perf_counter() - started
    writer = notes.get(WRITER_KEY)
    return LoadedFrame(
        frame=frame,
        read_seconds=seconds,
        fingerprint=lambda: arrow_files.fingerprint_stored(table, writer),
        hash_basis="materialised",
        writer=writer,
        stored_data_hash=notes.get(DATA_HASH_KEY),
        stored_schema_hash=notes.get(SCHEMA_HASH_KEY),
        bytes_hash=stored.bytes_hash,
        bytes_seconds=stored.bytes_seconds,
    )


class ArrowBackedHandler(FrameHandler):
    """A frame library whose frames convert to and from one Arrow table; its ``kind`` is also
    the name of the library's module."""

    #: The frame type names (in the module named ``kind``) this handler stores.
    type_names: ClassVar[tuple[str, ...]]

    def accepts_type(self, cls: type) -> bool:
        return type_is(cls, self.kind, self.type_names)

    def rows_of(self, obj: Any) -> ArrowRows:
        return ArrowRows(self.to_arrow(obj), self.kind)

    def stage(self, obj: Any, where: TableSlice, context: Any) -> StagedWrite:
        return ArrowStagedWrite(self.to_arrow(obj), where.location, writer=self.kind)

    def load(
        self, where: TableSlice, context: Any, as_type: Any = None, digest_with: str | None = None
    ) -> LoadedFrame:
        convert = partial(self.from_arrow, as_type=as_type)
        return load_arrow(where.location, convert, digest_with)

    @abstractmethod
    def to_arrow(self, obj: Any) -> Any:
        """The Arrow table of one of this handler's frames, converted once."""

    @abstractmethod
    def from_arrow(self, table: Any, as_type: type | None) -> Any:
        """The stored Arrow table as this handler's frame (``as_type`` when given)."""
