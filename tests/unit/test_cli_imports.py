"""The command line loads only what a command needs: its help and a search of a local store load
none of the heavy libraries, a listing and a trace of a local store only the printer (they print
the indexed documents, no record model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ubunye_core.records.model import RunRecord
from ubunye_core.store import LineageStore

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

REPO = Path(__file__).resolve().parents[2]
HEAVY = {"pydantic", "fsspec", "upath", "rich", "pandas", "pyarrow", "polars", "dagster"}

# A fresh interpreter runs the command and prints the heavy top-level packages it imported.
_PROBE = f"""
import io, json, sys
from contextlib import redirect_stdout
from ubunye_core.cli import main
with redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
heavy = sorted({{name.split(".")[0] for name in sys.modules}} & set({sorted(HEAVY)!r}))
print(json.dumps({{"code": code, "heavy": heavy}}))
"""


def heavy_imports(args: list[str], cwd: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "rows")])}
    found = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(found.stdout.splitlines()[-1])


def save_one_run(usecase_dir: Path, status: str) -> None:
    """A local store under ``usecase_dir`` holding one run of shop/sales/daily."""
    LineageStore.for_usecase_dir(usecase_dir).save(
        RunRecord(run_id="r1", usecase="shop", package="sales", task_name="daily",
                  started_at="2026-01-01T00:00:00Z", status=status)
    )  # fmt: skip


def test_help_imports_none_of_the_heavy_libraries(tmp_path):
    assert heavy_imports(["--help"], tmp_path) == {"code": 0, "heavy": []}


def test_list_of_a_local_store_imports_only_the_table_printer(tmp_path):
    save_one_run(tmp_path, "success")
    args = ["lineage", "list", "-u", "shop", "-p", "sales", "-t", "daily"]
    assert heavy_imports(args, tmp_path) == {"code": 0, "heavy": ["rich"]}


def test_trace_of_a_local_stores_newest_run_imports_only_the_tree_printer(tmp_path):
    save_one_run(tmp_path, "success")
    args = ["lineage", "trace", "-u", "shop", "-p", "sales", "-t", "daily"]
    assert heavy_imports(args, tmp_path) == {"code": 0, "heavy": ["rich"]}
    assert heavy_imports([*args, "--json"], tmp_path) == {"code": 0, "heavy": ["rich"]}


@pytest.mark.parametrize("as_json", [False, True], ids=["lines", "json"])
def test_a_search_of_a_local_store_imports_none_of_the_heavy_libraries(tmp_path, as_json):
    save_one_run(tmp_path, "error")
    args = ["lineage", "search", "--status", "error", *(["--json"] if as_json else [])]
    assert heavy_imports(args, tmp_path) == {"code": 0, "heavy": []}


# Run as a program (arguments from sys.argv): did pydantic scan for plugins, was a table drawn?
_TRACE_PROBE = """
import io, json, sys
from contextlib import redirect_stdout
from ubunye_core.cli import main
sys.argv = ["ubunye-dagster", *sys.argv[1:]]
with redirect_stdout(io.StringIO()):
    code = main()
from pydantic.plugin import _loader
print(json.dumps({"code": code, "scanned": _loader._plugins is not None,
                  "table": "rich.table" in sys.modules}))
"""


def test_trace_of_a_named_run_as_a_program_skips_pydantics_plugin_scan_and_draws_no_table(
    tmp_path,
):
    save_one_run(tmp_path, "success")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "rows")])}
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    # A named run is loaded through the record model (a listing's document is the newest's).
    args = ["lineage", "trace", "-u", "shop", "-p", "sales", "-t", "daily", "--run-id", "r1"]
    found = subprocess.run([sys.executable, "-c", _TRACE_PROBE, *args], cwd=tmp_path, env=env,
                           capture_output=True, text=True, check=True)  # fmt: skip
    report = json.loads(found.stdout.splitlines()[-1])
    assert report == {"code": 0, "scanned": False, "table": False}
