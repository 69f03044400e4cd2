"""The observers every Ubunye IO manager gives its write pipeline: the asset's expectations as
the gate, the in-step drift judgement as the judge."""

from __future__ import annotations

from ubunye_dagster.checks.gate import ExpectationGate
from ubunye_dagster.drift.in_step import InStepJudge
from ubunye_dagster.io.pipeline.observers import WriteObservers


def receipt_observers() -> WriteObservers:
    """The expectations gate and the in-step judge."""
    return WriteObservers(gate=ExpectationGate(), judge=InStepJudge())
