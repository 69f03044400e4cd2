"""rows-v1 hashed on a Spark standalone cluster (a master and two workers on 127.0.0.1) equals the
single-process digest and the reference's, a Spark asset materialised there through
UbunyeIOManager records it, and the executors need only ubunye-rows, pyarrow, pandas and numpy.

The executors' Python is a venv holding only those (tests/external_python.py, ``EXECUTOR``):
no dagster, no ubunye-dagster, no pyspark (that reaches them from the Spark installation). The
driver is a process of its own (tests/spark_cluster_driver.py: one SparkContext a process, and
this session may hold the local one); it hashes with the Arrow path in the executors' Python
workers, never falling back to the JVM, so a digest from it is the executors' work.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import suppress
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from external_python import executor_python
from local_spark import SPARK_SESSION_TIME_ZONE
from spark_cluster import processes_in_groups, run_driver, spark_standalone_cluster

from ubunye_rows import fingerprint
from ubunye_rows.testing.backend_conformance import vectors_for

pytestmark = [
    pytest.mark.spark,
    pytest.mark.deployment,
    pytest.mark.skipif(sys.platform != "linux", reason="the cluster's daemons run on Linux"),
]

DRIVER = Path(__file__).resolve().parents[1] / "spark_cluster_driver.py"
#: Partitions each table is spread over before the cluster hashes it.
PARTITIONS = 6
MIXED_ROWS = 20_000
#: What the executors' venv is built to hold; anything else in it must be required by these.
EXECUTOR_DISTRIBUTIONS = {"ubunye-rows", "pyarrow", "pandas", "numpy"}
#: Spark's fixed default ports: master RPC, master UI, worker UI, REST submission, driver UI.
DEFAULT_PORTS = {7077, 8080, 8081, 6066, 4040}
#: What the executors' Python must not import.
ABSENT_MODULES = ("dagster", "dagster_pipes", "ubunye_dagster", "ubunye_core", "ubunye")


def mixed_table(rows: int, seed: int = 20260601) -> pa.Table:
    """Types a pandas frame holds as they are: ints, doubles with nulls, awkward text, booleans,
    UTC instants and dates. (pandas cannot tell a NaN from a null, nor hold a wall time as one:
    the golden vectors have those.)"""
    rng = np.random.default_rng(seed)
    amounts = rng.normal(0.0, 1000.0, rows)
    words = np.array(["alpha", "Mokoena, Thabo", "naïve", "ünïcödé", 'quote " and \\', "\n"])
    micros = rng.integers(-2_000_000_000_000_000, 4_000_000_000_000_000, rows)
    return pa.table(
        {
            "id": pa.array(np.arange(rows, dtype=np.int64)),
            "amount": pa.array(amounts, mask=rng.random(rows) < 0.05),
            "count": pa.array(rng.integers(-(2**31), 2**31 - 1, rows, dtype=np.int32)),
            "name": pa.array([f"{w}-{i}" for i, w in enumerate(rng.choice(words, rows))]),
            "flag": pa.array(rng.random(rows) < 0.5),
            "seen": pa.array(micros, pa.timestamp("us", tz="UTC")),
            "day": pa.array(rng.integers(-10_000, 30_000, rows, dtype=np.int32), pa.date32()),
        }
    )


def tables() -> dict[str, pa.Table]:
    """Every golden vector Spark holds, and the mixed table."""
    found = {f"golden-{v.name}": v.table() for v in vectors_for("spark")}
    found["mixed"] = mixed_table(MIXED_ROWS)
    return found


def single_process_digest(table: pa.Table) -> list:
    """The digest of ``table`` on the Arrow path in this process."""
    fp = fingerprint(table)
    return [fp.schema_hash, fp.data_hash, fp.row_count]


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory, spark_cluster) -> dict:
    """What the driver reported from the two-worker cluster."""
    folder = tmp_path_factory.mktemp("spark-cluster-driver")
    (folder / "tables").mkdir()
    for name, table in tables().items():
        with pa.ipc.new_file(folder / "tables" / f"{name}.arrow", table.schema) as writer:
            writer.write_table(table)
    command = [sys.executable, str(DRIVER), spark_cluster.master_url, str(folder), str(PARTITIONS)]
    run_driver(command, spark_cluster.driver_environment(), timeout=900)
    return json.loads((folder / "driver.json").read_text("utf-8"))


def test_every_golden_vector_hashed_on_the_cluster_gives_the_single_process_digest(cluster_run):
    golden = {
        f"golden-{v.name}": [v.schema_hash, v.data_hash, v.row_count] for v in vectors_for("spark")
    }
    for name, table in tables().items():
        if name == "mixed":
            continue
        got = cluster_run["digests"][name]
        assert "error" not in got, f"{name}: {got.get('error')}"
        assert got["digest"] == single_process_digest(table) == golden[name], name


def test_the_digest_on_a_two_worker_cluster_equals_the_single_process_and_pandas_digests(
    cluster_run,
):
    table = mixed_table(MIXED_ROWS)
    got = cluster_run["digests"]["mixed"]
    assert "error" not in got, got.get("error")
    assert got["partitions"] == PARTITIONS
    pandas_digest = fingerprint(table.to_pandas())
    expected = [pandas_digest.schema_hash, pandas_digest.data_hash, pandas_digest.row_count]
    assert got["digest"] == expected == single_process_digest(table)


def test_the_digest_on_the_cluster_equals_the_reference_engines_on_the_same_frame(cluster_run):
    got = cluster_run["digests"]["mixed"]
    assert "error" not in got, got.get("error")
    assert got["digest"] == got["reference"]


def test_a_spark_asset_materialised_on_the_cluster_records_the_single_process_digest(
    cluster_run,
):
    asset = cluster_run["asset"]
    assert asset["success"] and asset["backend"] == "spark"
    assert asset["digest"] == single_process_digest(mixed_table(MIXED_ROWS))
    assert asset["hash_basis"] == "materialised"
    assert asset["parts"] == PARTITIONS  # written by the executors, one file a partition


def test_the_driver_ran_in_a_session_zone_other_than_utc(cluster_run):
    assert cluster_run["session_time_zone"] == SPARK_SESSION_TIME_ZONE != "UTC"


def test_the_executors_run_the_venv_and_import_ubunye_rows_from_it(cluster_run, spark_cluster):
    venv = spark_cluster.executor_python.parent.parent
    for report in cluster_run["executors"]:
        modules = report["modules"]
        assert Path(report["python"]).parent.parent == venv, report["python"]
        for held in ("ubunye_rows", "ubunye_rows._kernel", "pyarrow", "pandas", "numpy"):
            assert modules[held] is not None and modules[held].startswith(str(venv)), (held, report)


def test_the_executors_need_only_the_rows_wheel_pyarrow_pandas_numpy(cluster_run):
    for report in cluster_run["executors"]:
        for absent in ABSENT_MODULES:
            assert report["modules"][absent] is None, (absent, report["modules"])
        installed = {name.lower(): needs for name, needs in report["distributions"].items()}
        needed, todo = set(), list(EXECUTOR_DISTRIBUTIONS)
        while todo:
            name = todo.pop().lower()
            if name in installed and name not in needed:
                needed.add(name)
                todo.extend(installed[name])
        assert needed >= EXECUTOR_DISTRIBUTIONS
        assert set(installed) == needed, set(installed) - needed


def test_the_tasks_ran_on_both_workers(cluster_run, spark_cluster):
    folders = {Path(report["cwd"]).parents[1] for report in cluster_run["executors"]}
    assert folders == set(spark_cluster.worker_folders()), folders


def listening_ports(pids: list[int]) -> set[int]:
    """The TCP ports the processes ``pids`` listen on (Linux: their sockets in /proc)."""
    inodes = set()
    for pid in pids:
        with suppress(OSError):  # it ended while we looked
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def test_the_cluster_listens_on_ports_the_os_chose_not_on_sparks_defaults(spark_cluster):
    ports = listening_ports(processes_in_groups(spark_cluster.process_groups))
    assert len(ports) >= 3  # the master's RPC and UI, each worker's RPC and UI
    assert not ports & DEFAULT_PORTS, ports & DEFAULT_PORTS


def test_leaving_the_cluster_block_by_an_error_ends_every_process_it_started(tmp_path):
    pytest.importorskip("pyspark")
    started = []
    cluster = spark_standalone_cluster(tmp_path, executor_python(), workers=1)
    with pytest.raises(KeyError, match="left by an error"), cluster as running:
        started = processes_in_groups(running.process_groups)
        raise KeyError("left by an error")
    assert len(started) >= 2  # the master and the worker
    assert processes_in_groups(running.process_groups) == []
