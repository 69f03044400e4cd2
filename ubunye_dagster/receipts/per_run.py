"""What this process keeps for each of its latest Dagster runs, the oldest run forgotten first."""

from __future__ import annotations

from typing import TypeVar

from ubunye_rows.latest import Latest

T = TypeVar("T")


class PerRun(Latest[str, T]):
    """One value for each of the process's latest ``runs`` runs (by run id); ``lock`` (reentrant)
    is held by every method and may be held around several calls."""

    def __init__(self, runs: int = 16):
        super().__init__(runs)
