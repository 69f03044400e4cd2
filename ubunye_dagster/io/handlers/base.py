"""What a frame library's handler offers a storage: the rows of a frame, a staged write, a read.

Every handler gets the same :class:`TableSlice`, as Dagster's ``DbIOManager`` type handlers do:
where the rows are kept and which partition of them, never the IO manager's own layout.

A write is a :class:`StagedWrite` (the writer: stage, commit, discard) and a view of its rows
(:class:`Rows`: their hash, schema and the :class:`RowsView` the asset's rules read). It is
staged first (converted, or for Spark written to a temporary folder), hashed and passed by the
pipeline's gate, and only then committed into place, so a write that fails or is refused leaves
the previous materialisation as it was.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from ubunye_rows.hashing.digest import Fingerprint

if TYPE_CHECKING:
    from upath import UPath


def type_is(cls: type, library: str, names: Sequence[str]) -> bool:
    """True when ``cls`` (or a base) is one of ``names`` from ``library``; imports nothing."""
    for klass in getattr(cls, "__mro__", ()):
        module = (getattr(klass, "__module__", "") or "").split(".")[0]
        if module == library and klass.__name__ in names:
            return True
    return False


#: Asset metadata naming the column (or, per dimension, the columns) holding the partition key.
PARTITION_EXPR = "partition_expr"


@dataclass(frozen=True)
class TableSlice:
    """The rows one handler stages or loads: where the storage keeps them, and which partition."""

    #: Where: a Parquet file (or Spark's folder of part files), or a Delta table.
    location: UPath
    #: The partition key (a multi-partition key keeps its dimensions); None when unpartitioned.
    partition_key: Any = None
    #: The asset's ``partition_expr`` metadata: the column (or, per dimension, the columns)
    #: holding the partition key, for a storage that selects a partition's rows by value.
    partition_expr: Any = None


@dataclass(frozen=True)
class RowsView:
    """The rows a write holds, as a rule reads them: an Arrow table or a Spark DataFrame, each
    column's rows-v1 type (Arrow's own name where rows-v1 has none), and the count if known."""

    engine: Literal["arrow", "spark"]
    rows: Any
    column_kinds: Mapping[str, str]
    total: int | None = None


@dataclass
class Stopwatch:
    """Seconds spent in timed blocks, summed."""

    seconds: float = 0.0

    @contextmanager
    def timing(self) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds += time.perf_counter() - started


class ReceiptRows(Protocol):
    """Rows as a receipt describes them: their rows-v1 and their schema."""

    def fingerprint(self) -> Fingerprint:
        """rows-v1 of exactly these rows; never raises."""
        ...

    def schema_pairs(self) -> list[tuple[str, str]]:
        """``(column, canonical type)`` pairs of the rows, in their order."""
        ...


class Rows(ReceiptRows, Protocol):
    """Rows in hand (a frame as staged, or as loaded): what the receipt describes and what the
    asset's rules read."""

    def rows_view(self) -> RowsView:
        """The rows as the asset's rules read them."""
        ...


class StagedWrite(ABC):
    """The writer of one frame to one location: its rows staged, nothing visible there before
    ``commit``, nothing left behind by ``discard``. What the rows are is ``rows``, a view."""

    #: What the data is stored as, for the record's ``format`` (e.g. ``parquet``).
    format: ClassVar[str] = "parquet"

    def __init__(self, location: str, rows: Rows):
        self.location = location
        #: The rows as staged: the gate reads them before the commit.
        self.rows = rows
        self.write_watch = Stopwatch()
        #: The digest of the stored bytes (``ubunye_core.materialisations.byte_digest``), known
        #: once committed.
        self.bytes_hash: str | None = None

    def hashed_as_staged(self) -> ReceiptRows | None:
        """The rows the receipt describes when they are hashed as staged, before the commit, so
        the notes beside the data carry their hash: ``rows``. None for a store whose rows are
        hashed only where it keeps them (``commit`` gives them)."""
        return self.rows

    @abstractmethod
    def commit(self, notes: Mapping[str, str]) -> ReceiptRows:
        """Put the rows in place atomically, with ``notes`` (who wrote it, its hash) beside
        them; returns the rows the receipt describes (``rows`` unless the store's are hashed
        where it keeps them)."""

    @abstractmethod
    def discard(self) -> None:
        """Leave nothing of this write behind; the previous data stays as it was."""

    def source_version(self) -> dict[str, Any] | None:
        """The version of the data this write made, for the step's ``source_version`` (a Delta
        table version); None when the store keeps no versions."""
        return None


@dataclass
class LoadedFrame:
    """One stored materialisation loaded for a step: the frame and how to hash what was read."""

    frame: Any
    read_seconds: float
    #: rows-v1 of what was read, under the writer's rules; computed only when called.
    fingerprint: Callable[[], Fingerprint]
    #: ``materialised`` when the hashed rows are the frame the step gets, ``recomputed`` when
    #: hashing reads the data again (a lazy Spark frame).
    hash_basis: str
    #: Who wrote it (``pandas``, ``pyarrow``, ``polars``, ``spark``) when the data says so.
    writer: str | None = None
    #: The data hash stored beside the data when it was written, when there is one.
    stored_data_hash: str | None = None
    #: The schema hash stored beside the data when it was written, when there is one.
    stored_schema_hash: str | None = None
    #: False when this reader's hash may legitimately differ from the writer's (another engine
    #: reads some types differently); then only a schema-level match is held against the writer.
    same_rules_as_writer: bool = True
    #: The digest of the stored bytes as read, when the load was asked for one.
    bytes_hash: str | None = None
    #: Seconds that digest took (beside the decode, not after it).
    bytes_seconds: float = 0.0
    #: The version that was read (a Delta table version), for the step's ``source_version``.
    source_version: dict[str, Any] | None = None


class FrameHandler(ABC):
    """One frame library's way to stage writes and load reads (Parquet unless it says)."""

    #: The handler's name, also written beside the data as its writer (``pandas``, ``spark``...).
    kind: ClassVar[str]
    #: The record's ``backend`` for steps that write with this handler.
    backend: ClassVar[str]
    #: What the data is stored as, for the record's ``format`` and the timing names.
    storage: ClassVar[str] = "parquet"

    @abstractmethod
    def accepts_type(self, cls: type) -> bool:
        """True when frames of type ``cls`` are this handler's."""

    def accepts(self, obj: Any) -> bool:
        """True when ``obj`` is one of this handler's frames."""
        return self.accepts_type(type(obj))

    @abstractmethod
    def rows_of(self, obj: Any) -> Rows:
        """The rows of one of this handler's frames, in memory, without storing anything."""

    @abstractmethod
    def stage(self, obj: Any, where: TableSlice, context: Any) -> StagedWrite:
        """Prepare ``obj`` to be written as ``where``; nothing is visible there yet."""

    @abstractmethod
    def load(
        self, where: TableSlice, context: Any, as_type: Any = None, digest_with: str | None = None
    ) -> LoadedFrame:
        """Read the rows of ``where`` as this handler's frame (``as_type`` when given);
        with ``digest_with`` (a byte digest algorithm) also digest the stored bytes."""
