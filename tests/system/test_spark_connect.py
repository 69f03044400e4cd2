"""The Spark IO-manager tests pass against a local Spark Connect server too.

One Python process cannot hold a classic and a Connect session (a Connect session switches
pyspark's functions to Connect for the whole process), so the module runs again in a second
pytest with ``--spark-connect``: one local Connect server for that session (tests/conftest.py).
What Connect changes is how the IO manager reaches Spark (the session, writing, reading back);
the hash itself runs in Spark's Python workers either way, and its tests compare every Spark
digest with the Arrow path's on the classic session. The IO manager's tests hash every frame
they write and read, so the Connect pass proves those digests too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
CONNECT_MODULES = ["tests/spark/test_spark_io_manager.py"]


def test_the_spark_io_manager_tests_pass_on_spark_connect(tmp_path):
    pytest.importorskip("pyspark")
    report = tmp_path / "connect.xml"
    # One process (-n 0): it holds the one Connect session, whatever the outer run's workers.
    command = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider"]
    command += ["--spark-connect"]
    command += [f"--junitxml={report}", "-W", "ignore::FutureWarning", *CONNECT_MODULES]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT), str(ROOT / "rows"), os.environ.get("PYTHONPATH", "")]
        ),
    }
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)

    suite = ET.parse(report).getroot().find("testsuite")
    counts = {key: int(suite.get(key)) for key in ("tests", "failures", "errors", "skipped")}
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert counts["failures"] == counts["errors"] == 0
    assert counts["tests"] - counts["skipped"] >= 10, counts  # the module ran, not skipped
