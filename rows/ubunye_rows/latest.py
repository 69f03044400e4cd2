"""A map that keeps the values of its latest keys only, the oldest forgotten first: what a
process remembers between calls (sketches, records it saved, its runs) without growing."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Latest(Generic[K, V]):
    """The values of the latest ``size`` keys put; ``lock`` (reentrant) is held by every method
    and may be held around several calls."""

    def __init__(self, size: int):
        self._values: OrderedDict[K, V] = OrderedDict()
        self._size = size
        self.lock = threading.RLock()

    def get(self, key: K) -> V | None:
        """The key's value, None when none is kept."""
        with self.lock:
            return self._values.get(key)

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` for ``key``, which becomes the newest."""
        with self.lock:
            self._values[key] = value
            self._keep_newest(key)

    def setdefault(self, key: K, make: Callable[[], V]) -> V:
        """The key's value, made by ``make`` when none is kept; the key becomes the newest."""
        with self.lock:
            value = self._values.get(key)
            if value is None:
                value = self._values[key] = make()
            self._keep_newest(key)
            return value

    def forget(self, key: K) -> None:
        """Keep nothing for ``key``."""
        with self.lock:
            self._values.pop(key, None)

    def _keep_newest(self, key: K) -> None:
        self._values.move_to_end(key)
        while len(self._values) > self._size:
            self._values.popitem(last=False)
