"""The drift demo (`example_project.drift_demo`): its planted non-deterministic asset is flagged
by its drift sensor on the second materialisation, as the sensor page's picture shows."""

from __future__ import annotations

import dagster as dg

from example_project.definitions import DRIFT_SENSOR
from example_project.drift_demo import DEMO_ASSET, DEMO_JOB, build_definitions
from ubunye_core.records.drift import SAME_INPUTS


def test_the_planted_asset_is_flagged_same_inputs_on_its_second_materialisation(tmp_path):
    defs = build_definitions(tmp_path)
    job = defs.resolve_job_def(DEMO_JOB)
    with dg.instance_for_test() as instance:
        first, second = (job.execute_in_process(instance=instance).run_id for _ in range(2))
        context = dg.build_sensor_context(instance=instance)
        data = defs.resolve_sensor_def(DRIFT_SENSOR).evaluate_tick(context)

    key = dg.AssetKey.from_user_string(DEMO_ASSET)
    judged = [event for event in data.asset_events if event.asset_key == key]
    assert [evaluation.passed for evaluation in judged] == [True, False]
    flagged = judged[-1].metadata
    assert flagged["ubunye/reason"].value == SAME_INPUTS
    assert (flagged["ubunye/run"].value, flagged["ubunye/previous_run"].value) == (second, first)
