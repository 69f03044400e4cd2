"""What a listing of runs yields and in what order, shared by the folder scan and the index.

Newest first means the reference's order: file modification time, newest first. Runs whose files
share a time are ordered by ``started_at`` (newest first; a time that cannot be read comes after
every readable one, by its text), then by task path and file name (descending), so the order is
total and the same whether it comes from reading the folders or from the index.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, NamedTuple

from ubunye_core.records.times import instant

if TYPE_CHECKING:
    from ubunye_core.records.model import RunRecord

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

#: ``rank`` of a file that is not a readable record: first within its modification time, so a
#: listing warns about it before it yields a run of that time (as a scan reading that time does).
UNREADABLE_RANK = 2
_READABLE_TIME_RANK = 1
_UNREADABLE_TIME_RANK = 0


def epoch_micros(moment: datetime) -> int:
    """Whole microseconds since 1970-01-01 UTC: exact, so SQL and Python compare alike."""
    return (moment - _EPOCH) // _MICROSECOND


_MICROSECOND = datetime.min.resolution


def started_order(started_at: str) -> tuple[int, int | None, str]:
    """``(rank, micros, tie)`` of a run's ``started_at`` for the newest-first order."""
    moment = instant(started_at)
    if moment is None:
        return _UNREADABLE_TIME_RANK, None, started_at
    return _READABLE_TIME_RANK, epoch_micros(moment), ""


def order_key(
    mtime: float, rank: int, micros: int | None, tie: str, task_path: str, file_name: str
) -> tuple[float, int, int, str, str, str]:
    """Sort key (largest first) of one run file; the index orders its columns the same way."""
    return (mtime, rank, micros if micros is not None else -(2**63), tie, task_path, file_name)


def record_of(document: Callable[[], str]) -> RunRecord:
    """The run record of a JSON document; the record model is loaded only when a record is
    made, so a listing that prints the index's columns never loads it."""
    from ubunye_core.records.model import RunRecord

    return RunRecord.from_json(document())


class FileEntry(NamedTuple):
    """One record file in a task folder: its name, modification time and change signature
    (three values that change whenever the file does)."""

    name: str
    mtime: float
    signature: tuple[Any, Any, Any]


@dataclass(slots=True)  # not frozen: a search makes one per matching run, frozen ones cost more
class RunEntry:
    """One run in a listing: where its file is and what a search table shows; the record and
    its JSON document are made only when asked for."""

    task_path: str
    file_name: str
    run_id: str
    status: str
    started_at: str
    duration_sec: float | None
    load_record: Callable[[], RunRecord] = field(repr=False, compare=False)
    load_document: Callable[[], str] = field(repr=False, compare=False)

    def record(self) -> RunRecord:
        """The run record."""
        return self.load_record()

    def document(self) -> str:
        """The record as ``RunRecord.to_json`` writes it."""
        return self.load_document()

    @classmethod
    def of_record(cls, task_path: str, file_name: str, record: RunRecord) -> RunEntry:
        """The entry of a record already read."""
        listed = (record.run_id, record.status, record.started_at, record.duration_sec)
        return cls(task_path, file_name, *listed, lambda: record, record.to_json)
