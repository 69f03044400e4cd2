"""What an external process launched through Dagster Pipes reports: its evidence as it starts,
and a receipt for each asset it writes.

Needs ``dagster-pipes`` (``pip install "ubunye-rows[pipes]"``), never ``dagster``::

    from dagster_pipes import open_dagster_pipes
    from ubunye_rows.pipes import report_evidence, report_receipt

    with open_dagster_pipes() as pipes:
        report_evidence(pipes)
        orders = build_orders()
        orders.to_parquet("/data/orders.parquet", index=False)
        report_receipt(pipes, orders, location="/data/orders.parquet", format="parquet")

The frame is hashed where it lives (a Spark DataFrame on its cluster, in one aggregation), and
the receipt is reported as the materialisation's metadata with its digest as the data version.
``report_evidence``, first thing in the job, reports the process's code hash and environment as
a Pipes custom message, so a job that fails before its first receipt still has them recorded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from dagster_pipes import PipesContext

from ubunye_rows.receipt import EVIDENCE_KEY, RECEIPT_KEY, build_receipt, evidence_document


def report_evidence(
    pipes: PipesContext, *, code_folder: str | os.PathLike[str] | None = None
) -> dict[str, Any]:
    """Report this process's code hash (of ``code_folder``, default the script's folder) and
    environment now, as the custom message ``{"ubunye/evidence": ...}``; returns what was sent.

    Called as the job starts, it lets the ``error`` records of a job that fails before its first
    receipt name this process rather than none.
    """
    evidence = evidence_document(code_folder)
    pipes.report_custom_message({EVIDENCE_KEY: evidence})
    return evidence


def report_receipt(
    pipes: PipesContext,
    frame: Any,
    *,
    asset_key: str | None = None,
    inputs: Mapping[str, Any] | None = None,
    location: str = "",
    format: str = "",
    code_folder: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Hash ``frame`` and report its receipt for ``asset_key`` (default: the one asset in scope);
    returns the receipt, which can be given as an input of the next asset this job writes.

    ``inputs`` maps a name (an upstream asset key such as ``"raw/orders"`` links the drift
    verdict to that asset) to a frame, hashed here, or to the receipt or ``Fingerprint`` of
    what the job read. ``location`` is where the rows were written: an IO-managed asset that
    reads this asset reads them there and verifies them against this digest.
    """
    key = asset_key if asset_key is not None else pipes.asset_key
    receipt = build_receipt(
        frame,
        name=key,
        location=location,
        format=format,
        inputs=inputs,
        code_folder=code_folder,
        partition_key=pipes.partition_key if _one_partition(pipes) else None,
    )
    pipes.report_asset_materialization(
        metadata={RECEIPT_KEY: {"raw_value": receipt, "type": "json"}},
        data_version=receipt["output"]["data_hash"],
        asset_key=key,
    )
    return receipt


def _one_partition(pipes: PipesContext) -> bool:
    """True when the step is scoped to exactly one partition."""
    if not pipes.is_partition_step:
        return False
    key_range = pipes.partition_key_range
    return key_range["start"] == key_range["end"]
