"""A code location for `dagster dev` whose one asset fails before it loads or returns anything.

Its data and records go under the folder named by ``UBUNYE_EXAMPLE_HOME``.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import pandas as pd

from ubunye_dagster import UbunyeIOManager, UbunyeResource, with_error_records

FAILING_JOB = "unreachable_job"


@dg.asset(group_name="intake")
def unreachable_source() -> pd.DataFrame:
    raise ConnectionError("cannot reach https://api.example.com?api_key=abc123secret")


HOME = Path(os.environ["UBUNYE_EXAMPLE_HOME"])

defs = dg.Definitions(
    assets=with_error_records([unreachable_source]),
    jobs=[dg.define_asset_job(FAILING_JOB)],
    resources={
        "io_manager": UbunyeIOManager(
            base_path=str(HOME / "data"), ubunye=UbunyeResource(usecase_dir=str(HOME))
        )
    },
)
