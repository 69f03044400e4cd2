"""A plain Definitions that adopts receipts in one line, for `dagster dev` and the executors.

``intake/unreachable_source`` fails before it loads or returns anything; ``ledger -> balance``
succeed. Data and records go under the folder named by ``UBUNYE_EXAMPLE_HOME``.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import pandas as pd

from ubunye_dagster import with_ubunye

HOME = Path(os.environ["UBUNYE_EXAMPLE_HOME"])


@dg.asset(group_name="intake")
def unreachable_source() -> pd.DataFrame:
    raise ConnectionError("cannot reach https://api.example.com?api_key=abc123secret")


@dg.asset
def ledger() -> pd.DataFrame:
    return pd.DataFrame({"entry": [1, 2, 3], "amount": [1.0, 2.0, 3.0]})


@dg.asset
def balance(ledger: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"total": [ledger["amount"].sum()]})


def plain_definitions(executor: dg.ExecutorDefinition | None = None) -> dg.Definitions:
    """The project as it was before adopting: assets and a job, no Ubunye anywhere."""
    return dg.Definitions(
        assets=[unreachable_source, ledger, balance],
        jobs=[dg.define_asset_job("everything")],
        executor=executor,
    )


defs = with_ubunye(plain_definitions(), base_path=str(HOME / "data"), usecase_dir=str(HOME))


def adopted_job(executor: dg.ExecutorDefinition) -> dg.JobDefinition:
    """The adopted job under ``executor``."""
    adopted = with_ubunye(
        plain_definitions(executor), base_path=str(HOME / "data"), usecase_dir=str(HOME)
    )
    return adopted.resolve_job_def("everything")


def multiprocess_job() -> dg.JobDefinition:
    """The adopted job under Dagster's multiprocess executor (rebuilt in each step process)."""
    return adopted_job(dg.multiprocess_executor)


def in_process_job() -> dg.JobDefinition:
    """The adopted job under Dagster's in-process executor."""
    return adopted_job(dg.in_process_executor)
