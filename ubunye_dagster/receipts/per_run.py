"""What this process keeps for each of its latest Dagster runs, the oldest run forgotten first."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerRun(Generic[T]):
    """One value for each of the process's latest ``runs`` runs (by run id); ``lock`` (reentrant)
    is held by every method and may be held around several calls."""

    def __init__(self, runs: int = 16):
        self._values: OrderedDict[str, T] = OrderedDict()
        self._runs = runs
        self.lock = threading.RLock()

    def get(self, run_id: str) -> T | None:
        """The run's value, None when none is kept."""
        with self.lock:
            return self._values.get(run_id)

    def setdefault(self, run_id: str, make: Callable[[], T]) -> T:
        """The run's value, made by ``make`` when none is kept; the run becomes the newest."""
        with self.lock:
            value = self._values.get(run_id)
            if value is None:
                value = self._values[run_id] = make()
            self._values.move_to_end(run_id)
            while len(self._values) > self._runs:
                self._values.popitem(last=False)
            return value
