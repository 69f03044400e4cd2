"""The README's "Using it" example runs as written: its records land under use case
``dagster``, package ``default``, the asset key as the task, and ``--asset`` finds them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from ubunye_core.cli import main

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- readme-example-runnable: using-it -->"


def using_it_snippet() -> str:
    """The Python block right after the README's "using-it" marker."""
    readme = (ROOT / "README.md").read_text()
    assert MARKER in readme, "the README marks its runnable example"
    found = re.search(r"```python\n(.*?)```", readme[readme.index(MARKER) :], re.DOTALL)
    assert found is not None
    return found.group(1)


def test_the_readme_example_runs_and_its_records_are_found_by_asset(tmp_path, capsys):
    (tmp_path / "orders.py").write_text(using_it_snippet())
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    env["DAGSTER_HOME"] = str(tmp_path / "dagster_home")
    (tmp_path / "dagster_home").mkdir()
    run = subprocess.run(
        [sys.executable, "orders.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    tasks = tmp_path / ".ubunye" / "lineage" / "dagster" / "default"
    assert sorted(p.name for p in tasks.iterdir()) == ["big_orders", "raw_orders"]
    [path] = (tasks / "big_orders").glob("*.json")
    written = json.loads(path.read_text())
    assert (written["usecase"], written["package"], written["task_name"]) == (
        "dagster", "default", "big_orders",
    )  # fmt: skip
    assert written["status"] == "success" and written["outputs"][0]["row_count"] == 2

    capsys.readouterr()
    code = main(["lineage", "list", "--asset", "big_orders", "-d", str(tmp_path), "--json"])
    listed = json.loads(capsys.readouterr().out)
    assert code == 0 and [r["run_id"] for r in listed] == [written["run_id"]]
    code = main(["lineage", "trace", "--asset", "big_orders", "-d", str(tmp_path)])
    assert code == 0 and "dagster/default/big_orders" in capsys.readouterr().out
