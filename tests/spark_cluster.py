"""A Spark standalone cluster on 127.0.0.1, as teams deploy Spark: one master and two workers
started by the pip pyspark's ``spark-class``, their executors' Python a venv of its own.

Use::

    with spark_standalone_cluster(folder) as master_url:   # "spark://127.0.0.1:PORT"
        env = {**os.environ, **cluster_driver_environment(executor_python())}
        # a driver process (not this one: see below) with that environment builds
        # SparkSession.builder.master(master_url) with cluster_session_settings()

A process holds one SparkContext, and the test session's local one may already be up, so the
driver runs in a process of its own (tests/spark_cluster_driver.py). The Python an executor
starts is the driver's ``PYSPARK_PYTHON`` (pyspark sends it with each Python function), so
the driver's environment names the executors' venv; pyspark itself reaches the executors from
the Spark installation (``python/lib/pyspark.zip``), as on any cluster.

Every daemon runs in its own process group, with its logs, work folders (the executors' cwd)
and configuration in ``folder``; leaving the block ends the groups (daemons, executors and
their Python workers), and nothing else.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path

from local_spark import SPARK_SESSION_TIME_ZONE

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
#: Each worker offers one core and this much memory; each executor takes all of it.
WORKER_CORES = 1
WORKER_MEMORY = "1g"
#: The heap of the master and worker daemons themselves (they only schedule).
DAEMON_MEMORY = "512m"


def spark_class() -> Path:
    """The ``spark-class`` launcher of the installed pyspark."""
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home()) / "bin" / "spark-class"


def cluster_session_settings() -> dict[str, str]:
    """Settings of a driver on this machine for the cluster: driver bound to loopback, UI and
    progress bar off, the tests' non-UTC session zone, one executor per worker, and jobs held
    back until every executor has registered."""
    return {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": SPARK_SESSION_TIME_ZONE,
        "spark.executor.cores": str(WORKER_CORES),
        "spark.executor.memory": "768m",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # The first job waits for every worker's executor, so it spreads over all of them.
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
    }


def cluster_driver_environment(executor_python: Path) -> dict[str, str]:
    """Environment variables of a driver process whose executors run ``executor_python``."""
    return {"PYSPARK_PYTHON": str(executor_python), "SPARK_LOCAL_IP": "127.0.0.1"}


@contextmanager
def spark_standalone_cluster(
    folder: Path, workers: int = 2, start_timeout: float = 180.0
) -> Iterator[str]:
    """A master and ``workers`` workers on 127.0.0.1 (ports chosen by the OS, logs and work
    folders in ``folder``); yields the master's ``spark://`` URL once every worker registered,
    and stops them all on exit."""
    folder.mkdir(parents=True, exist_ok=True)
    env = _daemon_environment(folder)
    started: list[subprocess.Popen] = []
    try:
        master = _start(folder / "master.log", [MASTER_CLASS, *_ports()], env, started)
        ui_url = _wait_for_master_ui(folder / "master.log", master, start_timeout)
        master_url = _master_state(ui_url)["url"]
        for number in range(1, workers + 1):
            work_dir = folder / f"worker-{number}"
            work_dir.mkdir()
            arguments = [WORKER_CLASS, *_ports(), "--cores", str(WORKER_CORES)]
            arguments += ["--memory", WORKER_MEMORY, "--work-dir", str(work_dir), master_url]
            _start(folder / f"worker-{number}.log", arguments, env, started)
        _wait_for_workers(ui_url, workers, started, folder, start_timeout)
        yield master_url
    finally:
        for process in reversed(started):
            _stop_group(process)


def _ports() -> list[str]:
    """Loopback, with RPC and web UI ports the OS picks (0), so no two clusters collide."""
    return ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0"]


def _daemon_environment(folder: Path) -> dict[str, str]:
    """The daemons' environment: loopback, an empty configuration folder, logs in ``folder``,
    and no ``PYTHONPATH`` (an executor's Python workers would inherit it)."""
    conf_dir = folder / "conf"
    conf_dir.mkdir(exist_ok=True)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return {
        **env,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_CONF_DIR": str(conf_dir),
        "SPARK_LOG_DIR": str(folder),
        "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
    }


def _start(
    log_path: Path, arguments: list[str], env: Mapping[str, str], started: list[subprocess.Popen]
) -> subprocess.Popen:
    """Start ``spark-class arguments`` in a process group of its own, logging to ``log_path``."""
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(spark_class()), *arguments],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env),
            start_new_session=True,
        )
    started.append(process)
    return process


def _wait_for_master_ui(log_path: Path, master: subprocess.Popen, timeout: float) -> str:
    """The master web UI's URL, read from its log once it is bound."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(r"MasterWebUI.* started at (http://\S+)", log_path.read_text("utf-8"))
        if found:
            return found.group(1).replace("0.0.0.0", "127.0.0.1")
        if master.poll() is not None:
            raise RuntimeError(f"the Spark master exited ({master.returncode}):\n{_tail(log_path)}")
        time.sleep(0.5)
    raise RuntimeError(f"the Spark master's UI was not up after {timeout}s:\n{_tail(log_path)}")


def _master_state(ui_url: str) -> dict:
    """The master's state as its web UI's JSON gives it (URL, workers and their states)."""
    with urllib.request.urlopen(f"{ui_url}/json/", timeout=10) as response:
        return json.load(response)


def _wait_for_workers(
    ui_url: str, workers: int, started: list[subprocess.Popen], folder: Path, timeout: float
) -> None:
    """Return once the master lists ``workers`` workers ALIVE; raise when one exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [w for w in _master_state(ui_url).get("workers", []) if w.get("state") == "ALIVE"]
        if len(alive) >= workers:
            return
        for process in started:
            if process.poll() is not None:
                logs = "\n".join(_tail(path) for path in sorted(folder.glob("*.log")))
                raise RuntimeError(f"a Spark daemon exited ({process.returncode}):\n{logs}")
        time.sleep(0.5)
    raise RuntimeError(f"fewer than {workers} Spark workers registered after {timeout}s")


def _stop_group(process: subprocess.Popen) -> None:
    """End ``process``'s group (the daemon, its executors and their Python workers)."""
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    # An executor outlives its worker's SIGTERM for a moment: end what is left of the group.
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _tail(path: Path, characters: int = 3000) -> str:
    """The end of a log file, for an error message."""
    return f"--- {path.name}\n" + path.read_text("utf-8", errors="replace")[-characters:]
