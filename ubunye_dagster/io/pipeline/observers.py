"""What the write pipeline is given to observe a write: a gate over the staged rows (the asset's
expectations) and a judge of the saved receipt (the drift summary and verdict). The pipeline
knows only these shapes, never the rules or the verdicts themselves."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import dagster as dg

from ubunye_core.locations import StoreAccess
from ubunye_dagster.dagster_internals import StepExecutionContext
from ubunye_dagster.io.handlers.base import RowsView
from ubunye_dagster.receipts.saved import Judged, SavedReceipt


class RowsGate(Protocol):
    """Checks staged rows before they are committed."""

    def check(
        self, context: dg.OutputContext, rows: Callable[[], RowsView], step_name: str
    ) -> list[dict[str, Any]]:
        """Each check's result (the record's ``expectations``); ``rows`` is read only if needed."""
        ...

    def refusal(self, step_name: str, results: list[dict[str, Any]]) -> BaseException | None:
        """The error that refuses the write, or None to commit."""
        ...

    def refused(self, context: dg.OutputContext, error: BaseException) -> None:
        """Told of any error that stopped the write (a refusal included)."""
        ...


class ReceiptJudge(Protocol):
    """Judges an asset output's saved receipt in its step."""

    def prepare(self, step_context: StepExecutionContext) -> None:
        """Told as the pipeline first meets a step (its first read or write), before any rows
        are read or written: it may start asking what judging the step's outputs needs."""
        ...

    def judge(
        self, context: dg.OutputContext, saved: SavedReceipt, access: StoreAccess
    ) -> Judged: ...


@dataclass(frozen=True)
class WriteObservers:
    """The observers of every write through one pipeline (none: store and record only)."""

    gate: RowsGate | None = None
    judge: ReceiptJudge | None = None
