"""Calls a caller leaves for after it goes on, run in order on one daemon thread.

Each queue starts its thread when the first call is queued. ``settle`` waits for every call
queued so far, and the process settles each queue when it exits; a forked child has none of its
parent's threads, so it starts with an empty queue (what was queued is the parent's to run).
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
from collections.abc import Callable


class LaterCalls:
    """Calls run in order on one daemon thread named ``name``, each handling its own failures."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._reset()
        atexit.register(self.settle)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._queue: queue.Queue[Callable[[], None]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def queue(self, call: Callable[[], None]) -> None:
        """Run ``call`` after those queued before it."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._queue.put(call)

    def settle(self) -> None:
        """Return once every call queued so far has run."""
        self._queue.join()

    def _run(self) -> None:
        calls = self._queue  # the queue this thread was started for, even after a reset
        while True:
            call = calls.get()
            try:
                call()
            finally:
                calls.task_done()
