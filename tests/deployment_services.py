"""The processes of a deployment, as a team runs them, started by a test on 127.0.0.1: a Dagster
instance on PostgreSQL with the run queue (``dagster.yaml``), ``dagster-daemon run`` and
``dagster-webserver`` over one workspace, each its own process group, and a GraphQL client of
the webserver (the `example_project.webserver.DagsterDev` driver's, for a plain webserver).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml
from postgres_cluster import PostgresCluster

from example_project.webserver import LOOPBACK, DagsterDev, WebserverError, tail_of

#: ``dagster-daemon`` with loop intervals shortened.
QUICK_DAEMON = Path(__file__).resolve().parent / "quick_daemon.py"
#: The run queue's limit: at most this many runs in progress at once.
MAX_CONCURRENT_RUNS = 3


def instance_config(pg: PostgresCluster) -> dict[str, Any]:
    """The ``dagster.yaml`` of the deployment: every storage on ``pg``, runs through the queue."""
    return {
        "storage": {"postgres": {"postgres_db": pg.dagster_storage_config()}},
        "run_coordinator": {
            "module": "dagster.core.run_coordinator",
            "class": "QueuedRunCoordinator",
            "config": {"max_concurrent_runs": MAX_CONCURRENT_RUNS},
        },
        "run_launcher": {"module": "dagster.core.launcher", "class": "DefaultRunLauncher"},
        "telemetry": {"enabled": False},
        "nux": {"enabled": False},
    }


def write_instance_yaml(dagster_home: Path, pg: PostgresCluster) -> str:
    """Write ``dagster_home/dagster.yaml`` for ``pg``; returns its text."""
    dagster_home.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(instance_config(pg), sort_keys=False)
    (dagster_home / "dagster.yaml").write_text(text, encoding="utf-8")
    return text


def write_workspace(
    folder: Path, python_file: Path, location: str, working_directory: Path, executable: Path
) -> Path:
    """A ``workspace.yaml`` with one code location loaded from ``python_file`` by the interpreter
    ``executable`` (its code server and run workers run there)."""
    entry = {
        "python_file": {
            "relative_path": str(python_file),
            "working_directory": str(working_directory),
            "executable_path": str(executable),
            "location_name": location,
        }
    }
    path = folder / "workspace.yaml"
    path.write_text(yaml.safe_dump({"load_from": [entry]}, sort_keys=False), encoding="utf-8")
    return path


class ServiceProcess:
    """One long-running command in its own process group, its output in a log file."""

    def __init__(self, command: list[str], env: Mapping[str, str], cwd: Path, log_path: Path):
        self.command = command
        self.env = dict(env)
        self.cwd = cwd
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        #: Every process group this service started (a killed one's children may outlive it).
        self.groups: list[int] = []

    def start(self) -> None:
        """Start the command (returns at once); its output is appended to the log."""
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.command,
                cwd=self.cwd,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.groups.append(self.process.pid)

    @property
    def pid(self) -> int:
        assert self.process is not None, "not started"
        return self.process.pid

    def kill_now(self) -> None:
        """SIGKILL the command's own process, no warning and no cleanup; its children (a code
        server finishing a run) are left to end as they would, and ended by `stop`."""
        process, self.process = self.process, None
        assert process is not None, "not started"
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    def stop(self, grace_seconds: float = 20.0) -> None:
        """End every process group it started: SIGTERM, then SIGKILL for what is left after the
        grace."""
        process, self.process = self.process, None
        groups, self.groups = self.groups, []
        for sent in (signal.SIGTERM, signal.SIGKILL):
            for group in groups:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(group, sent)
            if process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=grace_seconds)

    def log_tail(self, characters: int = 4000) -> str:
        """The end of the command's output, for error messages."""
        return tail_of(self.log_path, characters)


def daemon_process(
    workspace: Path,
    env: Mapping[str, str],
    log_path: Path,
    loops: Mapping[str, float] | None = None,
) -> ServiceProcess:
    """``dagster-daemon run`` over ``workspace``: the run queue, sensors, backfills; with
    ``loops`` (``{"backfill": 2}``), those of its loops turn that often, in seconds, instead of
    Dagster's hard-coded intervals (tests/quick_daemon.py, on this interpreter)."""
    command = ["dagster-daemon", "run", "-w", str(workspace)]
    if loops:
        shortened = [f"{loop}={seconds}" for loop, seconds in loops.items()]
        command = [sys.executable, str(QUICK_DAEMON), *shortened, *command[1:]]
    return ServiceProcess(command, env, workspace.parent, log_path)


class Webserver(DagsterDev):
    """``dagster-webserver`` on 127.0.0.1 (no daemon of its own), driven through GraphQL."""

    def __init__(self, workspace: Path, env: Mapping[str, str], log_path: Path, location: str):
        super().__init__(
            Path(env["DAGSTER_HOME"]), Path(env["DAGSTER_HOME"]), workspace=workspace,
            location=location, env=env,
        )  # fmt: skip
        self.log_path = log_path
        self.service = ServiceProcess(
            ["dagster-webserver", "-w", str(workspace), "-h", LOOPBACK, "-p", str(self.port)],
            env,
            workspace.parent,
            log_path,
        )

    def start(self) -> None:
        self.service.start()
        self._process = self.service.process

    def stop(self, grace_seconds: float = 20.0) -> None:
        self.service.stop(grace_seconds)
        self._process = None

    def ask(self, document: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Run a GraphQL document of one operation; its `data`, or a WebserverError."""
        body = json.dumps({"query": document, "variables": dict(variables or {})}).encode()
        request = urllib.request.Request(
            f"{self.url}/graphql", data=body, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                payload = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as refused:
            detail = refused.read().decode("utf-8", errors="replace")[:2000]
            raise WebserverError(f"HTTP {refused.code} from GraphQL: {detail}") from refused
        if payload.get("errors"):
            raise WebserverError(f"GraphQL errors: {payload['errors']}")
        return payload["data"]


@contextlib.contextmanager
def running(*services: ServiceProcess | Webserver) -> Iterator[None]:
    """Start each service in order; stop them all, last first, whatever happened."""
    started: list[ServiceProcess | Webserver] = []
    try:
        for service in services:
            service.start()
            started.append(service)
        yield
    finally:
        for service in reversed(started):
            service.stop()


def wait_for(what: str, probe: Any, timeout: float, interval: float = 0.5) -> Any:
    """Call ``probe`` until it returns something truthy; that value, or a TimeoutError naming
    ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(interval)
    raise TimeoutError(f"{what}: not after {timeout:.0f}s")
