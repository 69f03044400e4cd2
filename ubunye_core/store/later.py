"""Index updates a record save leaves for after its caller goes on.

A record file is written before ``save`` returns; telling the index of it can wait (the index
is a cache: a listing that comes first finds the file in its folder). The updates run in order
on one daemon thread a process; every update the store makes itself waits for those queued
before it, so the index never takes an older version after a newer one. ``settle`` waits for
them all, and the process settles them when it exits.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
from collections.abc import Callable


class IndexUpdates:
    """Calls run in order on one daemon thread, started when the first is queued."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Callable[[], None]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def queue(self, update: Callable[[], None]) -> None:
        """Run ``update`` after those queued before it; it handles its own failures."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="ubunye-index-updates", daemon=True
                )
                self._thread.start()
            self._queue.put(update)

    def settle(self) -> None:
        """Return once every update queued so far has run."""
        self._queue.join()

    def _run(self) -> None:
        while True:
            update = self._queue.get()
            try:
                update()
            finally:
                self._queue.task_done()


_UPDATES = IndexUpdates()


def queue_index_update(update: Callable[[], None]) -> None:
    """Run ``update`` on this process's index thread, after those queued before it."""
    _UPDATES.queue(update)


def settle_index_updates() -> None:
    """Return once every index update queued in this process has run."""
    _UPDATES.settle()


def _forget_in_child() -> None:
    # A forked child has none of its parent's threads; queued updates are the parent's to run.
    global _UPDATES
    _UPDATES = IndexUpdates()


atexit.register(settle_index_updates)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
