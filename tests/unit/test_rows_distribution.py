"""ubunye-rows stands alone: a Spark executor or a process Dagster launches through Pipes
installs only it (pyarrow and numpy beside), and hashes, sketches and gathers evidence there."""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

import ubunye_rows
import ubunye_rows._kernel
from ubunye_rows import code_hash, environment, environment_hash, fingerprint

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

ROOT = Path(__file__).resolve().parents[2]
#: What ubunye-rows must never need: frame libraries it does not hash, and everything above it.
NOT_NEEDED = ("pandas", "polars", "pyspark", "dagster", "ubunye_core", "ubunye_dagster")

# Runs in a fresh interpreter where the modules above cannot be imported, as where only
# ubunye-rows is installed.
_ALONE = textwrap.dedent(
    """
    import importlib.abc, json, sys

    class NotInstalled(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in NOT_NEEDED:
                raise ModuleNotFoundError(f"No module named {name!r}")
            return None

    sys.meta_path.insert(0, NotInstalled())
    import pyarrow as pa
    from ubunye_rows import code_hash, combine, environment, environment_hash, fingerprint

    table = pa.table({"id": [3, 1, 2], "name": ["c", None, "b"]})
    fp = fingerprint(table)
    both = combine([fingerprint(table.slice(0, 1)), fingerprint(table.slice(1))])
    print(json.dumps({
        "data_hash": fp.data_hash,
        "schema_hash": fp.schema_hash,
        "combined": both.data_hash,
        "code_hash": code_hash(sys.argv[1]),
        "environment_hash": environment_hash(environment()),
        "loaded": sorted({m.split(".")[0] for m in sys.modules} & set(NOT_NEEDED)),
    }))
    """
)


def _run_alone(folder: Path) -> dict:
    script = f"NOT_NEEDED = {NOT_NEEDED!r}\n{_ALONE}"
    done = subprocess.run(
        [sys.executable, "-c", script, str(folder)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT / "rows",
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_importing_ubunye_rows_loads_no_frame_library_and_nothing_above_it():
    done = subprocess.run(
        [sys.executable, "-c", "import sys, ubunye_rows; print(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT / "rows",
    )
    loaded = {name.split(".")[0] for name in done.stdout.split()}
    assert loaded & set(NOT_NEEDED) == set()


def test_without_pandas_dagster_or_the_core_an_arrow_table_gets_the_same_receipt(tmp_path):
    (tmp_path / "task.py").write_text("def task():\n    return 1\n")
    table = pa.table({"id": [3, 1, 2], "name": ["c", None, "b"]})
    alone = _run_alone(tmp_path)
    assert alone["loaded"] == []
    assert alone["data_hash"] == fingerprint(table).data_hash == alone["combined"]
    assert alone["schema_hash"] == fingerprint(table).schema_hash
    assert alone["code_hash"] == code_hash(tmp_path)
    assert alone["environment_hash"] == environment_hash(environment())


def test_every_name_the_root_exports_is_importable_from_the_root():
    missing = [name for name in ubunye_rows.__all__ if not hasattr(ubunye_rows, name)]
    assert missing == []
    assert {"fingerprint", "Fingerprint", "METHOD", "combine", "Sketch", "code_hash"} <= set(
        ubunye_rows.__all__
    )


def _declared_by_stub(stub: Path) -> dict[str, list[str]]:
    """What a stub says its module exports: each function's parameters, each class's bases, and
    each variable (as an empty list). Typing helpers (protocols, type aliases) are left out."""
    declared: dict[str, list[str]] = {}
    for node in ast.parse(stub.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef):
            declared[node.name] = [argument.arg for argument in node.args.args]
        elif isinstance(node, ast.ClassDef):
            bases = [ast.unparse(base) for base in node.bases]
            if "Protocol" not in bases:
                declared[node.name] = bases
        elif isinstance(node, ast.AnnAssign) and ast.unparse(node.annotation) != "TypeAlias":
            declared[ast.unparse(node.target)] = []
    return declared


def _exported_by(module) -> dict[str, list[str]]:
    """What an extension module exports (its ``__all__``), described as the stub describes it."""
    exported: dict[str, list[str]] = {}
    for name in module.__all__:
        value = getattr(module, name)
        if isinstance(value, type):
            exported[name] = [base.__name__ for base in value.__bases__]
        elif callable(value):
            exported[name] = list(inspect.signature(value).parameters)
        else:
            exported[name] = []
    return exported


def test_the_kernel_stub_declares_exactly_what_the_kernel_exports():
    kernel = ubunye_rows._kernel
    stub = Path(kernel.__file__).with_name("_kernel.pyi")  # where type checkers look for it
    assert _declared_by_stub(stub) == _exported_by(kernel)


def test_ubunye_rows_is_marked_as_typed():
    assert (Path(ubunye_rows.__file__).parent / "py.typed").is_file()
