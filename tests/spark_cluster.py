"""A Spark standalone cluster on 127.0.0.1, as teams deploy Spark: one master and two workers
started by the pip pyspark's ``spark-class``, their executors' Python a venv of its own.

Use (or the ``spark_cluster`` fixture of tests/conftest.py, one cluster a test module)::

    with spark_standalone_cluster(folder, executor_python()) as cluster:
        # cluster.master_url: "spark://127.0.0.1:PORT"; cluster.executor_python: the venv's
        # interpreter. A driver process (not this one: see below) with the environment
        # cluster.driver_environment() builds its session with cluster.session_settings().
        run_driver([sys.executable, "driver.py", ...], cluster.driver_environment(), timeout=900)

A process holds one SparkContext, and the test session's local one may already be up, so the
driver runs in a process of its own (tests/spark_cluster_driver.py). The Python an executor
starts is the driver's ``PYSPARK_PYTHON`` (pyspark sends it with each Python function), so
the driver's environment names the executors' venv; pyspark itself reaches the executors from
the Spark installation (``python/lib/pyspark.zip``), as on any cluster.

Every daemon runs in its own process group, with its logs, work folders (the executors' cwd)
and configuration in ``folder``; leaving the block, by an error too, ends the groups (daemons,
executors and their Python workers), and nothing else.
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
from dataclasses import dataclass
from pathlib import Path

from local_spark import SPARK_SESSION_TIME_ZONE

ROOT = Path(__file__).resolve().parents[1]

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
#: Each worker offers one core and this much memory; each executor takes all of it.
WORKER_CORES = 1
WORKER_MEMORY = "1g"
#: The heap of the master and worker daemons themselves (they only schedule).
DAEMON_MEMORY = "512m"
#: How long the daemons of a cluster being stopped have, together, to end on SIGTERM (0.4 s on an
#: idle machine; in a full suite run they have been seen to let a 30 s grace pass) before SIGKILL.
STOP_GRACE_SECONDS = 10.0


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


#: The folders a driver process started from the tests imports from: the repository (for
#: ubunye_core and ubunye_dagster), rows/ (ubunye_rows) and tests/ (these helpers).
DRIVER_PATHS = (ROOT, ROOT / "rows", ROOT / "tests")


@dataclass(frozen=True)
class SparkCluster:
    """A running standalone cluster: what a driver on this machine needs to use it."""

    #: The master's ``spark://127.0.0.1:PORT`` URL.
    master_url: str
    #: The interpreter the executors run their Python workers on.
    executor_python: Path
    #: Logs (``*.log``), configuration (``conf/``) and the workers' work folders (``worker-N/``).
    folder: Path
    #: The process groups of the daemons (each holds its executors and their Python workers).
    process_groups: tuple[int, ...]

    def session_settings(self) -> dict[str, str]:
        """A driver's SparkSession settings: the master's URL and ``cluster_session_settings``."""
        return {"spark.master": self.master_url, **cluster_session_settings()}

    def driver_environment(self) -> dict[str, str]:
        """This process's environment for a driver process: the executors' Python, loopback, and
        ``PYTHONPATH`` reaching this repository's packages and tests/."""
        paths = [*map(str, DRIVER_PATHS), os.environ.get("PYTHONPATH", "")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
        return {**env, **cluster_driver_environment(self.executor_python)}

    def worker_folders(self) -> list[Path]:
        """Each worker's work folder (its executors' working folders are under it)."""
        return sorted(self.folder.glob("worker-*/"))


@contextmanager
def spark_standalone_cluster(
    folder: Path, executor_python: Path, workers: int = 2, start_timeout: float = 180.0
) -> Iterator[SparkCluster]:
    """A master and ``workers`` workers on 127.0.0.1 (ports chosen by the OS, logs and work
    folders in ``folder``), their executors on ``executor_python``; yields the cluster once
    every worker registered, and stops all of it on exit."""
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
        groups = tuple(process.pid for process in started)
        yield SparkCluster(master_url, executor_python, folder, groups)
    finally:
        _stop_groups(started)


def run_driver(command: list[str], env: Mapping[str, str], timeout: float) -> str:
    """Run a driver process in a process group of its own (its JVM and Python workers with it);
    its output, or a RuntimeError with it when it fails or outlives ``timeout`` (then the group
    is ended)."""
    driver = subprocess.Popen(
        command,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = driver.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop_groups([driver])
        output = driver.stdout.read() if driver.stdout else ""
        raise RuntimeError(f"the Spark driver ran over {timeout}s:\n{output[-6000:]}") from None
    finally:
        if driver.poll() is None:  # interrupted while waiting
            _stop_groups([driver])
    if driver.returncode != 0:
        raise RuntimeError(f"the Spark driver exited ({driver.returncode}):\n{output[-6000:]}")
    return output


def processes_in_groups(groups: tuple[int, ...]) -> list[int]:
    """The processes alive in any of ``groups`` (Linux: read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:  # it ended while we looked
            continue
        fields = text[text.rindex(")") + 2 :].split()
        if int(fields[2]) in groups and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def _ports() -> list[str]:
    """Loopback, with RPC and web UI ports the OS picks (0), so no two clusters collide."""
    return ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0"]


def _daemon_environment(folder: Path) -> dict[str, str]:
    """The daemons' environment: loopback, an empty configuration folder, logs in ``folder``, no
    REST server, and no ``PYTHONPATH`` (an executor's Python workers would inherit it)."""
    conf_dir = folder / "conf"
    conf_dir.mkdir(exist_ok=True)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return {
        **env,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_CONF_DIR": str(conf_dir),
        "SPARK_LOG_DIR": str(folder),
        "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
        # The master's REST submission server binds a fixed port (6066); nothing here uses it.
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
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


def _stop_groups(processes: list[subprocess.Popen], grace: float = STOP_GRACE_SECONDS) -> None:
    """End each process's group (a daemon, its executors and their Python workers): SIGTERM to
    all at once, then SIGKILL to whatever is left of them after ``grace`` seconds."""
    for process in processes:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for process in processes:
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(deadline - time.monotonic(), 0.01))
    # A daemon that outlives its grace, and an executor outliving its worker's SIGTERM for a
    # moment: end what is left of each group.
    for process in processes:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _tail(path: Path, characters: int = 3000) -> str:
    """The end of a log file, for an error message."""
    return f"--- {path.name}\n" + path.read_text("utf-8", errors="replace")[-characters:]
