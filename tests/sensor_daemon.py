"""One iteration of Dagster's own sensor daemon over a code location in a Python file, and the
sensor's latest tick as its page in the UI asks for it (GraphQL): status, skip reason, runs,
cursor and the tick's logs. Dagster internals, as the daemon and the UI use them."""

from __future__ import annotations

import logging
from typing import Any

import dagster as dg
import pytest

#: The fields of a tick the sensor's page shows: the tick table, its dialog, "View logs".
TICK_QUERY = """
query SensorTicks($selector: InstigationSelector!) {
  instigationStateOrError(instigationSelector: $selector) {
    ... on InstigationState {
      ticks(limit: 1) {
        status skipReason runIds cursor
        logEvents { events { message level } }
      }
    }
    ... on PythonError { message }
  }
}
"""


def latest_tick_after_one_iteration(
    instance: dg.DagsterInstance, python_file: str, attribute: str, sensor_name: str
) -> dict[str, Any]:
    """Start the sensor, run one daemon iteration, and return its tick as GraphQL has it."""
    graphql = pytest.importorskip("dagster_graphql.test.utils")
    try:  # Dagster 1.11 and later
        from dagster._core.remote_origin import InProcessCodeLocationOrigin
    except ModuleNotFoundError:  # Dagster 1.10
        from dagster._core.remote_representation.origin import InProcessCodeLocationOrigin
    from dagster._core.test_utils import create_test_daemon_workspace_context
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
    from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
    from dagster._daemon.sensor import execute_sensor_iteration

    target = InProcessWorkspaceLoadTarget(
        InProcessCodeLocationOrigin(
            LoadableTargetOrigin(python_file=python_file, attribute=attribute)
        )
    )
    with create_test_daemon_workspace_context(target, instance) as workspace:
        entry = next(iter(workspace.create_request_context().get_code_location_entries().values()))
        assert entry.code_location is not None, entry.load_error
        location = entry.code_location
        remote = location.get_repository("__repository__").get_sensor(sensor_name)
        instance.start_sensor(remote)
        list(execute_sensor_iteration(workspace, logging.getLogger("sensor-daemon"), None, None))
        selector = {
            "repositoryLocationName": location.name,
            "repositoryName": "__repository__",
            "name": sensor_name,
        }
        shown = graphql.execute_dagster_graphql(
            workspace.create_request_context(), TICK_QUERY, variables={"selector": selector}
        )
    assert shown.errors is None, shown.errors
    [tick] = shown.data["instigationStateOrError"]["ticks"]
    return tick


def logged(tick: dict[str, Any], level: str) -> list[str]:
    """The tick's log messages at one level ("WARNING", "ERROR", "INFO")."""
    return [event["message"] for event in tick["logEvents"]["events"] if event["level"] == level]
