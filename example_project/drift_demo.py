"""A planted non-deterministic asset and its drift sensor, so a flag can be seen: materialise
`demo/random_sample` twice and the sensor's tick flags it `drift (same inputs)`.

Its own code location, kept out of the example shop so the shop stays reproducible:

    dagster dev -m example_project.drift_demo
"""

from __future__ import annotations

import random
from pathlib import Path

import dagster as dg
import pandas as pd

from example_project.definitions import DRIFT_SENSOR, DRIFT_SENSOR_INTERVAL_SECONDS, USECASE
from example_project.paths import data_dir, example_home
from ubunye_dagster import (
    UbunyeIOManager,
    UbunyeResource,
    build_drift_sensor,
    build_reproducibility_checks,
)

#: The job that materialises the planted asset.
DEMO_JOB = "random_sample"
DEMO_ASSET = "demo/random_sample"
#: How many customers the sample draws, and from how many.
SAMPLE_SIZE = 5
CUSTOMERS = 1000


# It reads no asset, so it declares itself deterministic to be judged strictly, as a source
# expected to give the same rows every time would.
@dg.asset(key=DEMO_ASSET.split("/"), group_name="demo", metadata={"ubunye/deterministic": True})
def random_sample() -> pd.DataFrame:
    """Five customer ids drawn with no seed: the same code, environment and config give other
    rows on every run (the non-determinism the drift sensor flags)."""
    drawn = sorted(random.sample(range(1, CUSTOMERS + 1), SAMPLE_SIZE))
    return pd.DataFrame({"customer_id": drawn})


def build_definitions(home: Path) -> dg.Definitions:
    """The planted asset stored and receipted under `home`, its check and its drift sensor."""
    ubunye = UbunyeResource(usecase_dir=str(home), usecase=USECASE)
    return dg.Definitions(
        assets=[random_sample],
        # The sensor reports the check; the job leaves it out.
        asset_checks=build_reproducibility_checks([random_sample]),
        jobs=[
            dg.define_asset_job(
                DEMO_JOB, selection=dg.AssetSelection.assets(random_sample).without_checks()
            )
        ],
        sensors=[
            build_drift_sensor(
                [random_sample],
                name=DRIFT_SENSOR,
                minimum_interval_seconds=DRIFT_SENSOR_INTERVAL_SECONDS,
                default_status=dg.DefaultSensorStatus.RUNNING,
            )
        ],
        resources={"io_manager": UbunyeIOManager(base_path=str(data_dir(home)), ubunye=ubunye)},
        # One step: run it in the run's own process, not in a subprocess of it.
        executor=dg.in_process_executor,
    )


defs = build_definitions(example_home())
