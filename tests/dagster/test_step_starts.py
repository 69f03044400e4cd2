"""A step's start, as its record says: the time Dagster logged its ``STEP_START``, heard as the
process stored it when it can be, else read from the event log."""

from __future__ import annotations

import dagster as dg

from ubunye_dagster.receipts import step_starts
from ubunye_dagster.receipts.step_starts import step_started_at


class CountingInstance:
    """An instance whose event log reads are counted."""

    def __init__(self, instance: dg.DagsterInstance):
        self.instance = instance
        self.reads = 0

    def get_records_for_run(self, *args, **kwargs):
        self.reads += 1
        return self.instance.get_records_for_run(*args, **kwargs)

    def add_event_listener(self, run_id, listener):
        self.instance.add_event_listener(run_id, listener)


#: What each step found for its own start, by step key.
SEEN: dict[str, float | None] = {}
#: The instance the steps ask (set by the test).
ASKED: list[CountingInstance] = []


def ask(context: dg.AssetExecutionContext) -> None:
    """Note the step's start as ``step_started_at`` gives it, from inside the step."""
    step_key = context.op_execution_context.get_step_execution_context().step.key
    SEEN[step_key] = step_started_at(ASKED[0], context.run.run_id, step_key)


@dg.asset
def first(context) -> int:
    ask(context)
    return 1


@dg.asset
def second(context, first: int) -> int:
    ask(context)
    return first


@dg.asset
def third(context, second: int) -> int:
    ask(context)
    return second


def logged_starts(instance: dg.DagsterInstance, run_id: str) -> dict[str, float]:
    records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.STEP_START)
    return {r.event_log_entry.step_key: r.event_log_entry.timestamp for r in records.records}


def test_the_steps_a_process_starts_after_its_first_read_of_a_run_are_heard_not_read():
    SEEN.clear()
    with dg.DagsterInstance.ephemeral() as instance:
        ASKED[:] = [CountingInstance(instance)]
        run = dg.materialize([first, second, third], instance=instance)
        logged = logged_starts(instance, run.run_id)

    assert logged == SEEN
    assert ASKED[0].reads == 1  # the first step's read; the later two were heard
    assert step_starts._STARTS.get(run.run_id).heard.keys() == {"second", "third"}


@dg.asset(name="quiet_first")
def quiet_first() -> int:
    return 1


@dg.asset(name="quiet_second")
def quiet_second(quiet_first: int) -> int:
    return quiet_first


def test_a_step_not_heard_of_is_read_from_the_event_log():
    with dg.DagsterInstance.ephemeral() as instance:
        run = dg.materialize([quiet_first, quiet_second], instance=instance)  # nobody listens
        logged = logged_starts(instance, run.run_id)
        later = CountingInstance(instance)

        found = {key: step_started_at(later, run.run_id, key) for key in logged}

    assert found == logged
    assert later.reads == 2  # each asked for: neither was heard
