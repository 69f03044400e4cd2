"""When Dagster started a step: its ``STEP_START`` event, read a run at a time.

Each read asks the event log only for the step starts logged since the previous read of the same
run in this process, so a run of many steps costs one short query a step, not a pass over the
step's events.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import dagster as dg

#: Per run: the event log cursor read up to and the start of each step seen (a retried step's
#: latest attempt).
_STARTS: OrderedDict[str, tuple[str | None, dict[str, float]]] = OrderedDict()
_LOCK = threading.Lock()
_RUNS_REMEMBERED = 16


def step_started_at(
    instance: dg.DagsterInstance | None, dagster_run_id: str, step_key: str
) -> float | None:
    """The time (epoch seconds) Dagster logged the step's start; None when it cannot be read."""
    if instance is None:
        return None
    with _LOCK:
        cursor, starts = _STARTS.get(dagster_run_id, (None, {}))
        try:
            found = instance.get_records_for_run(
                dagster_run_id, cursor=cursor, of_type=dg.DagsterEventType.STEP_START
            )
        except Exception:  # an instance without event storage (a context built in a test)
            return starts.get(step_key)
        for record in found.records:
            entry = record.event_log_entry
            if entry.step_key is not None:
                starts[entry.step_key] = entry.timestamp
        _STARTS[dagster_run_id] = (found.cursor or cursor, starts)
        _STARTS.move_to_end(dagster_run_id)
        while len(_STARTS) > _RUNS_REMEMBERED:
            _STARTS.popitem(last=False)
        return starts.get(step_key)
