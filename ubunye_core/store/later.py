"""Index updates a record save leaves for after its caller goes on.

A record file is written before ``save`` returns; telling the index of it can wait (the index
is a cache: a listing that comes first finds the file in its folder). The updates run in order
on one daemon thread a process; every update the store makes itself waits for those queued
before it, so the index never takes an older version after a newer one. ``settle`` waits for
them all, and the process settles them when it exits.
"""

from __future__ import annotations

from collections.abc import Callable

from ubunye_core.background import LaterCalls

_UPDATES = LaterCalls("ubunye-index-updates")


def queue_index_update(update: Callable[[], None]) -> None:
    """Run ``update`` on this process's index thread, after those queued before it; it handles
    its own failures."""
    _UPDATES.queue(update)


def settle_index_updates() -> None:
    """Return once every index update queued in this process has run."""
    _UPDATES.settle()
