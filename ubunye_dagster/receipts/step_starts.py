"""When Dagster started a step: its ``STEP_START`` event, heard as the process stores it, else
read a run at a time.

The IO manager listens to the events the process stores for a run from the moment the run's
resources are set up (else the first read of a run starts listening), so a step of the run that
starts in this process after that is known without a query. A step not heard of (its start stored by
another process) is asked for: only the step starts logged since the previous read of the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.receipts.per_run import PerRun


@dataclass
class _RunStarts:
    """The event log cursor read up to, the start of each step seen (a retried step's latest
    attempt), and those heard as this process stored them."""

    cursor: str | None = None
    starts: dict[str, float] = field(default_factory=dict)
    heard: dict[str, float] = field(default_factory=dict)
    listening: bool = False

    def hear(self, entry: Any) -> None:
        """Note a step start among the run's events as they are stored; never raises (it runs
        inside Dagster's event handling)."""
        try:
            if entry.dagster_event_type == dg.DagsterEventType.STEP_START and entry.step_key:
                with _STARTS.lock:
                    self.heard[entry.step_key] = self.starts[entry.step_key] = entry.timestamp
        except Exception:  # an entry of another shape: nothing heard
            return


_STARTS: PerRun[_RunStarts] = PerRun()


def listen_to_step_starts(instance: dg.DagsterInstance | None, dagster_run_id: str) -> None:
    """Hear each step start of the run this process stores from now on (called as the run's
    resources are set up, before its steps start, so none of them asks the event log)."""
    if instance is not None:
        _listening(instance, dagster_run_id)


def _listening(instance: dg.DagsterInstance, dagster_run_id: str) -> _RunStarts:
    """What is known of the run's step starts, listening to the run's events from now on."""
    with _STARTS.lock:
        seen = _STARTS.setdefault(dagster_run_id, _RunStarts)
        if not seen.listening:
            seen.listening = internals.listen_to_run_events(instance, dagster_run_id, seen.hear)
        return seen


def step_started_at(
    instance: dg.DagsterInstance | None, dagster_run_id: str, step_key: str
) -> float | None:
    """The time (epoch seconds) Dagster logged the step's start; None when it cannot be read."""
    if instance is None:
        return None
    with _STARTS.lock:
        seen = _listening(instance, dagster_run_id)
        if step_key in seen.heard:
            return seen.heard[step_key]
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
