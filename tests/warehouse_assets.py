"""Assets the warehouse receipt tests share: a naive pandas datetime, which rows-v1 reads in
memory as a UTC instant (``timestamp``) and DuckDB and PostgreSQL store as a wall time
(``timestamp_ntz``), and an asset reading it."""

from __future__ import annotations

import dagster as dg
import pandas as pd

EVENTS = pd.DataFrame(
    {"event_id": [1, 2], "seen_at": pd.to_datetime(["2026-01-01 10:00", "2026-01-02 00:00"])}
)
#: The schema pairs the stored table has, whichever of the two databases stores it.
STORED_EVENTS_SCHEMA = [["event_id", "int64"], ["seen_at", "timestamp_ntz"]]


@dg.asset
def events() -> pd.DataFrame:
    return EVENTS


@dg.asset
def event_count(events: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"events": [len(events)]})
