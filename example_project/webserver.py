"""Drive a local `dagster dev` through its GraphQL API: start it on loopback, launch, poll, read.

Shared by the end-to-end test and the screenshot script; standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from example_project.paths import HOME_ENV

REPO_ROOT = Path(__file__).resolve().parent.parent
WORKSPACE = REPO_ROOT / "workspace.yaml"
LOCATION = "example_project"
REPOSITORY = "__repository__"
LOOPBACK = "127.0.0.1"

#: No telemetry, and no first-visit newsletter dialog covering the page.
INSTANCE_YAML = """\
telemetry:
  enabled: false
nux:
  enabled: false
"""

#: Every GraphQL operation this driver sends, in one document; a request names the one it runs.
OPERATIONS = """
mutation Launch($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on Error { message }
    ... on PythonError { stack }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}

query Run($runId: ID!) {
  runOrError(runId: $runId) { __typename ... on Run { status } ... on PythonError { message } }
}

query Workspace {
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries { name locationOrLoadError { __typename ... on PythonError { message } } }
    }
  }
}

query Ticks($selector: SensorSelector!) {
  sensorOrError(sensorSelector: $selector) {
    __typename
    ... on Sensor {
      sensorState {
        status
        ticks(limit: 20) { tickId status timestamp skipReason error { message } }
      }
    }
    ... on Error { message }
  }
}

# One round trip for what the tests read about an asset: its latest materialisation (run,
# partition, metadata) and its checks, each with its execution for that materialisation.
query AssetState($key: AssetKeyInput!) {
  assetOrError(assetKey: $key) {
    __typename
    ... on Asset {
      assetMaterializations(limit: 1) { runId partition metadataEntries { ...Entry } }
    }
  }
  assetNodeOrError(assetKey: $key) {
    __typename
    ... on AssetNode {
      assetChecksOrError {
        __typename
        ... on AssetChecks {
          checks {
            name
            blocking
            executionForLatestMaterialization {
              runId
              status
              evaluation { success targetMaterialization { runId } metadataEntries { ...Entry } }
            }
          }
        }
      }
    }
  }
}

fragment Entry on MetadataEntry {
  __typename
  label
  ... on TextMetadataEntry { text }
  ... on PathMetadataEntry { path }
  ... on UrlMetadataEntry { url }
  ... on JsonMetadataEntry { jsonString }
  ... on IntMetadataEntry { intValue }
  ... on FloatMetadataEntry { floatValue }
  ... on BoolMetadataEntry { boolValue }
  ... on MarkdownMetadataEntry { mdStr }
}
"""

FINISHED = {"SUCCESS", "FAILURE", "CANCELED"}


class WebserverError(RuntimeError):
    """The webserver did not start, did not answer, or answered with an error."""


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def metadata_value(entry: Mapping[str, Any]) -> Any:
    """The value of one GraphQL metadata entry, whatever its type (JSON decoded)."""
    for field in ("text", "path", "url", "intValue", "floatValue", "boolValue", "mdStr"):
        if field in entry:
            return entry[field]
    if "jsonString" in entry:
        return json.loads(entry["jsonString"])
    return None


def tail_of(log_path: Path, characters: int = 4000) -> str:
    """The last ``characters`` of a process's log file (empty before it exists)."""
    try:
        return log_path.read_text(encoding="utf-8", errors="replace")[-characters:]
    except FileNotFoundError:
        return ""


class DagsterDev:
    """`dagster dev -w workspace.yaml` on 127.0.0.1, in its own process group and DAGSTER_HOME.

    Use as a context manager: the whole process group is ended on exit, whatever happened.
    """

    def __init__(
        self,
        dagster_home: Path,
        example_home: Path,
        port: int | None = None,
        *,
        workspace: Path = WORKSPACE,
        location: str = LOCATION,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.dagster_home = dagster_home
        self.example_home = example_home
        self.workspace = workspace
        #: The code location that `launch_run` and `sensor_ticks` address unless told another.
        self.location = location
        #: Set in the environment of `dagster dev` (so of its code servers and run workers).
        self.extra_env = dict(env or {})
        self.port = port or free_port()
        self.url = f"http://{LOOPBACK}:{self.port}"
        self.log_path = dagster_home / "dagster-dev.log"
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> DagsterDev:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start the webserver and the daemon (returns at once; see `wait_until_ready`)."""
        self.dagster_home.mkdir(parents=True, exist_ok=True)
        (self.dagster_home / "dagster.yaml").write_text(INSTANCE_YAML, encoding="utf-8")
        env = dict(os.environ)
        env.update(
            {
                "DAGSTER_HOME": str(self.dagster_home),
                HOME_ENV: str(self.example_home),
                "DAGSTER_DISABLE_TELEMETRY": "1",
                "PYTHONUNBUFFERED": "1",
                **self.extra_env,
            }
        )
        command = [
            sys.executable,
            "-m",
            "dagster",
            "dev",
            "-w",
            str(self.workspace),
            "-h",
            LOOPBACK,
            "-p",
            str(self.port),
        ]
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                command,
                cwd=REPO_ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def stop(self, grace_seconds: float = 20.0) -> None:
        """End the process group: SIGTERM, then SIGKILL for whatever is left after the grace."""
        process = self._process
        if process is None:
            return
        self._process = None
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace_seconds)
        # dagster dev's children (code server, run workers, a JVM) share the group: end them all.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=grace_seconds)

    def log_tail(self, characters: int = 4000) -> str:
        """The end of the webserver's combined output, for error messages."""
        return tail_of(self.log_path, characters)

    def graphql(self, operation: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Run one operation of ``OPERATIONS``; the `data` member, or a WebserverError with the
        errors."""
        document = {
            "query": OPERATIONS,
            "operationName": operation,
            "variables": dict(variables or {}),
        }
        body = json.dumps(document).encode("utf-8")
        request = urllib.request.Request(
            f"{self.url}/graphql",
            data=body,
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                payload = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as refused:
            # GraphQL validation errors come back as HTTP 400 with the reason in the body.
            detail = refused.read().decode("utf-8", errors="replace")
            raise WebserverError(f"HTTP {refused.code} from GraphQL: {detail}") from refused
        if payload.get("errors"):
            raise WebserverError(f"GraphQL errors: {payload['errors']}")
        return payload["data"]

    def wait_until_loaded(
        self, locations: list[str] | None = None, timeout: float = 120.0
    ) -> dict[str, str | None]:
        """Wait until GraphQL answers and each of ``locations`` (default: this server's
        location) has loaded or failed to load; {location: None, or its load error}."""
        wanted = list(locations or [self.location])
        deadline = time.monotonic() + timeout
        last_problem = "no answer yet"
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise WebserverError(f"dagster dev exited early:\n{self.log_tail()}")
            try:
                workspace = self.graphql("Workspace")["workspaceOrError"]
            except (urllib.error.URLError, ConnectionError, TimeoutError) as problem:
                last_problem = repr(problem)
            else:
                outcome: dict[str, str | None] = {}
                for entry in workspace.get("locationEntries", []):
                    loaded = entry["locationOrLoadError"]
                    if entry["name"] not in wanted or loaded is None:
                        continue
                    failed = loaded["__typename"] == "PythonError"
                    outcome[entry["name"]] = loaded["message"] if failed else None
                if len(outcome) == len(wanted):
                    return outcome
                waiting = sorted(set(wanted) - set(outcome))
                last_problem = f"locations {', '.join(waiting)} not loaded yet"
            time.sleep(0.25)
        raise WebserverError(f"not ready after {timeout:.0f}s ({last_problem}):\n{self.log_tail()}")

    def wait_until_ready(self, timeout: float = 120.0, locations: list[str] | None = None) -> None:
        """Wait until GraphQL answers and the example's code location (or each of
        ``locations``) has loaded; a WebserverError if one failed to load."""
        for location, error in self.wait_until_loaded(locations, timeout).items():
            if error is not None:
                raise WebserverError(f"code location {location} failed: {error}")

    def launch_run(
        self,
        job_name: str,
        tags: Mapping[str, str] | None = None,
        *,
        location: str | None = None,
        run_config: Mapping[str, Any] | None = None,
    ) -> str:
        """Launch a run of one of the jobs of the example (or of ``location``), with
        ``run_config`` if given; its run id."""
        params = {
            "selector": {
                "repositoryLocationName": location or self.location,
                "repositoryName": REPOSITORY,
                "jobName": job_name,
            },
            "runConfigData": dict(run_config or {}),
            "executionMetadata": {
                "tags": [{"key": key, "value": value} for key, value in (tags or {}).items()]
            },
        }
        launched = self.graphql("Launch", {"params": params})["launchRun"]
        if launched["__typename"] != "LaunchRunSuccess":
            raise WebserverError(f"launchRun failed: {launched}")
        return str(launched["run"]["runId"])

    def wait_for_run(self, run_id: str, timeout: float = 150.0) -> str:
        """Poll a run until it finishes; its final status (SUCCESS, FAILURE or CANCELED)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run = self.graphql("Run", {"runId": run_id})["runOrError"]
            if run["__typename"] != "Run":
                raise WebserverError(f"run {run_id}: {run}")
            if run["status"] in FINISHED:
                return str(run["status"])
            time.sleep(0.5)
        raise WebserverError(f"run {run_id} not finished after {timeout:.0f}s:\n{self.log_tail()}")

    def asset_state(self, asset_key: list[str]) -> dict[str, Any]:
        """The ``AssetState`` answer for one asset: ``assetOrError`` and ``assetNodeOrError``."""
        return self.graphql("AssetState", {"key": {"path": asset_key}})

    def latest_materialisation(self, asset_key: list[str]) -> dict[str, Any]:
        """The asset's latest materialisation: run id, partition and metadata {label: value}."""
        answer = self.asset_state(asset_key)["assetOrError"]
        if answer["__typename"] != "Asset" or not answer["assetMaterializations"]:
            raise WebserverError(f"no materialisation of {'/'.join(asset_key)}: {answer}")
        latest = answer["assetMaterializations"][0]
        return {
            "run_id": latest["runId"],
            "partition": latest["partition"],
            "metadata": {e["label"]: metadata_value(e) for e in latest["metadataEntries"]},
        }

    def sensor_ticks(self, sensor_name: str, *, location: str | None = None) -> dict[str, Any]:
        """The sensor's state (RUNNING or STOPPED) and its latest ticks, newest first, of this
        server's code location or of ``location``."""
        selector = {
            "repositoryLocationName": location or self.location,
            "repositoryName": REPOSITORY,
            "sensorName": sensor_name,
        }
        answer = self.graphql("Ticks", {"selector": selector})["sensorOrError"]
        if answer["__typename"] != "Sensor":
            raise WebserverError(f"sensor {sensor_name}: {answer}")
        return answer["sensorState"]

    def check_for_latest_materialisation(
        self, asset_key: list[str], check_name: str
    ) -> dict[str, Any] | None:
        """The execution of `check_name` that targets the asset's latest materialisation, if any."""
        answer = self.asset_state(asset_key)["assetNodeOrError"]
        if answer["__typename"] != "AssetNode":
            raise WebserverError(f"no asset {'/'.join(asset_key)}: {answer}")
        checks = answer["assetChecksOrError"]
        if checks["__typename"] != "AssetChecks":
            raise WebserverError(f"asset checks of {'/'.join(asset_key)}: {checks}")
        for check in checks["checks"]:
            if check["name"] == check_name:
                return check["executionForLatestMaterialization"]
        raise WebserverError(f"{'/'.join(asset_key)} declares no check {check_name}")
