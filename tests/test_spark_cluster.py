"""rows-v1 hashed on a Spark standalone cluster (a master and two workers on 127.0.0.1) equals the
single-process digest, and the executors need only ubunye-rows, pyarrow, pandas and numpy.

The executors' Python is a venv holding only those (tests/external_python.py, ``EXECUTOR``):
no dagster, no ubunye-dagster, no pyspark (that reaches them from the Spark installation). The
driver is a process of its own (tests/spark_cluster_driver.py: one SparkContext a process, and
this session may hold the local one); it hashes with the Arrow path in the executors' Python
workers, never falling back to the JVM, so a digest from it is the executors' work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from external_python import executor_python
from local_spark import SPARK_SESSION_TIME_ZONE
from spark_cluster import cluster_driver_environment, spark_standalone_cluster

from ubunye_rows import fingerprint
from ubunye_rows.testing.backend_conformance import vectors_for

pytestmark = [
    pytest.mark.spark,
    pytest.mark.deployment,
    pytest.mark.skipif(sys.platform != "linux", reason="the cluster's daemons run on Linux"),
]

ROOT = Path(__file__).resolve().parent.parent
DRIVER = Path(__file__).resolve().parent / "spark_cluster_driver.py"
#: Partitions each table is spread over before the cluster hashes it.
PARTITIONS = 6
MIXED_ROWS = 20_000


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
def executor() -> Path:
    return executor_python()


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory, executor) -> dict:
    """What the driver reported from the two-worker cluster, and the cluster's folder."""
    pytest.importorskip("pyspark")
    folder = tmp_path_factory.mktemp("spark-cluster")
    (folder / "tables").mkdir()
    for name, table in tables().items():
        with pa.ipc.new_file(folder / "tables" / f"{name}.arrow", table.schema) as writer:
            writer.write_table(table)
    out = folder / "driver.json"
    paths = [str(ROOT), str(ROOT / "rows"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    env.update(cluster_driver_environment(executor))
    with spark_standalone_cluster(folder / "cluster") as master_url:
        command = [sys.executable, str(DRIVER), master_url, str(folder / "tables")]
        command += [str(PARTITIONS), str(out)]
        run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-6000:]
    return {**json.loads(out.read_text("utf-8")), "folder": folder / "cluster"}


def test_every_golden_vector_hashed_on_the_cluster_gives_the_single_process_digest(cluster_run):
    golden = {f"golden-{v.name}": [v.schema_hash, v.data_hash, v.row_count] for v in vectors_for("spark")}
    for name, table in tables().items():
        if name == "mixed":
            continue
        got = cluster_run["digests"][name]
        assert "error" not in got, f"{name}: {got.get('error')}"
        assert got["digest"] == single_process_digest(table) == golden[name], name


def test_a_frame_over_six_partitions_hashed_on_the_cluster_equals_its_pandas_digest(cluster_run):
    table = mixed_table(MIXED_ROWS)
    got = cluster_run["digests"]["mixed"]
    assert "error" not in got, got.get("error")
    assert got["partitions"] == PARTITIONS
    pandas_digest = fingerprint(table.to_pandas())
    expected = [pandas_digest.schema_hash, pandas_digest.data_hash, pandas_digest.row_count]
    assert got["digest"] == expected == single_process_digest(table)


def test_the_driver_ran_in_a_session_zone_other_than_utc(cluster_run):
    assert cluster_run["session_time_zone"] == SPARK_SESSION_TIME_ZONE != "UTC"


def test_the_executors_python_is_the_venv_with_ubunye_rows_and_without_dagster(
    cluster_run, executor
):
    venv = executor.parent.parent
    for report in cluster_run["executors"]:
        modules = report["modules"]
        assert Path(report["python"]).parent.parent == venv, report["python"]
        for held in ("ubunye_rows", "ubunye_rows._kernel", "pyarrow", "pandas"):
            assert modules[held] is not None and modules[held].startswith(str(venv)), (held, report)
        for absent in ("dagster", "ubunye_dagster", "ubunye_core", "ubunye"):
            assert modules[absent] is None, (absent, report)


def test_the_tasks_ran_on_both_workers(cluster_run):
    folders = {Path(report["cwd"]).parents[1].name for report in cluster_run["executors"]}
    assert folders == {"worker-1", "worker-2"}, folders
