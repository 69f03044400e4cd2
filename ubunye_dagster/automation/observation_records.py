"""An observation's run record: one per observed source per Dagster run, of kind
``observation``, its one output the source's rows as they were hashed where they are stored.

The record sits where a materialisation's would (usecase, the source's group, its key, the run)
so ``lineage list``, ``trace`` and ``search`` show observations beside materialisations. A
source that could not be read gets an ``error`` record carrying its hash error.
"""

from __future__ import annotations

import dataclasses

import dagster as dg

from ubunye_core.records.model import RunRecord, StepRecord
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.receipts import subjects
from ubunye_dagster.receipts.records import RecordPlace, close_record, fill_record, running_record

#: The record's ``model``: what made it (``asset`` for a materialisation).
OBSERVATION = "observation"


def save_observation(
    context: dg.AssetExecutionContext,
    place: RecordPlace,
    asset_key: dg.AssetKey,
    step: StepRecord,
    started_epoch: float,
) -> tuple[RunRecord, str]:
    """Save the observation record of ``asset_key`` holding ``step``; returns it and its path."""
    step_context = internals.step_context_of(context)
    subject = dataclasses.replace(
        subjects.step_asset_subject(step_context, asset_key, None),
        model=OBSERVATION,
        declared_code_folder=None,
        function_folder=None,
    )
    opened = running_record(subject, place, started_epoch)
    record = opened.record
    # The rows were only read: no code of the project's made them.
    record.code_hash = None
    fill_record(record, inputs=(), outputs=[step])
    failed = step.hash_error is not None
    close_record(record, "error" if failed else "success", step.hash_error)
    opened.closed = True
    return record, opened.save()
