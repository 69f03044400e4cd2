"""The progress bar a long index rebuild shows on a terminal; rich is loaded when a bar starts."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


class TerminalProgress:
    """A progress bar on stderr while the index reads many record files (at least
    ``threshold``); for terminals only, the caller decides that."""

    def __init__(self, threshold: int = 200) -> None:
        self._threshold = threshold
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            if total < self._threshold or done >= total:
                return
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("Indexing lineage records"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("index", total=total)
        self._bar.update(self._task, completed=done, total=total)
        if done >= total:
            self._bar.stop()
            self._bar = None
