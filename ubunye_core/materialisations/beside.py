"""Work run beside the caller on this process's helper threads: a stored file's bytes digested
while Arrow decodes them, a Parquet file encoded while its rows are hashed.

The threads are started once a process, not once a read or write: starting and joining a thread
cost a small asset more than the overlap saved. A forked child has none of its parent's
threads, so it starts its own.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

_T = TypeVar("_T")

#: Helper threads a process keeps: one for each of a few writes or reads running at once in
#: threads of one process; more wait their turn (the work itself never waits on other work).
HELPER_THREADS = 4

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def run_beside(work: Callable[..., _T], *args: Any) -> Future[_T]:
    """Start ``work(*args)`` on a helper thread; its result (or exception) is the future's."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(HELPER_THREADS, thread_name_prefix="ubunye-beside")
        return _pool.submit(work, *args)


def _forget_in_child() -> None:
    global _lock, _pool
    _lock, _pool = threading.Lock(), None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
