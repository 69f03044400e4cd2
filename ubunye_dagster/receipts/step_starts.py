"""When Dagster started a step: its ``STEP_START`` event, read a run at a time.

Each read asks the event log only for the step starts logged since the previous read of the same
run in this process, so a run of many steps costs one short query a step, not a pass over the
step's events.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import dagster as dg

from ubunye_dagster.receipts.per_run import PerRun


@dataclass
class _RunStarts:
    """The event log cursor read up to, and the start of each step seen (a retried step's latest
    attempt)."""

    cursor: str | None = None
    starts: dict[str, float] = field(default_factory=dict)


_STARTS: PerRun[_RunStarts] = PerRun()


def step_started_at(
    instance: dg.DagsterInstance | None, dagster_run_id: str, step_key: str
) -> float | None:
    """The time (epoch seconds) Dagster logged the step's start; None when it cannot be read."""
    if instance is None:
        return None
    with _STARTS.lock:
        seen = _STARTS.setdefault(dagster_run_id, _RunStarts)
        try:
            found = instance.get_records_for_run(
                dagster_run_id, cursor=seen.cursor, of_type=dg.DagsterEventType.STEP_START
            )
        except Exception:  # an instance without event storage (a context built in a test)
            return seen.starts.get(step_key)
        for record in found.records:
            entry = record.event_log_entry
            if entry.step_key is not None:
                seen.starts[entry.step_key] = entry.timestamp
        seen.cursor = found.cursor or seen.cursor
        return seen.starts.get(step_key)
