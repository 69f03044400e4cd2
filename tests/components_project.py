"""A components project as `create-dagster project` lays it out, adopting receipts with one
`defs.yaml`, driven by the real `dg` CLI (shared by tests/test_component*.py)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

COMPONENT_TYPE = "ubunye_dagster.components.UbunyeReceipts"
#: The component needs Dagster 1.11+; on 1.10 it is refused by name (test_dagster_internals).
HAS_COMPONENTS = tuple(int(part) for part in dg.__version__.split(".")[:2]) >= (1, 11)
NEEDS_COMPONENTS_DAGSTER = pytest.mark.skipif(
    not HAS_COMPONENTS, reason="the UbunyeReceipts component needs Dagster 1.11 or newer"
)
PROJECT = "shop"


@contextlib.contextmanager
def fresh_project_modules() -> Iterator[None]:
    """The project's package imported afresh in the block and forgotten after it: every
    project made here has the same package name, and Python would otherwise reuse the first
    one a worker loaded (another module's project)."""

    def loaded() -> list[str]:
        return [name for name in sys.modules if name.split(".")[0] == PROJECT]

    saved = {name: sys.modules.pop(name) for name in loaded()}
    try:
        yield
    finally:
        for name in loaded():
            del sys.modules[name]
        sys.modules.update(saved)


#: Set in a run's environment, the `feed` asset fails before it returns anything.
FEED_DOWN = "SHOP_FEED_DOWN"

SALES = """\
import os

import dagster as dg
import pandas as pd


@dg.asset(
    group_name="sales",
    metadata={
        "ubunye/expectations": [
            {"between": {"column": "amount", "min": 0}, "name": "amount_not_negative"}
        ]
    },
)
def orders() -> pd.DataFrame:
    return pd.DataFrame({"order": [1, 2, 3], "amount": [10.0, 20.0, 5.5]})


@dg.asset(group_name="sales")
def revenue(orders: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"total": [orders["amount"].sum()]})


@dg.asset(group_name="intake")
def feed() -> pd.DataFrame:
    if os.environ.get("SHOP_FEED_DOWN"):
        raise ConnectionError("cannot reach https://api.example.com?api_key=abc123secret")
    return pd.DataFrame({"x": [1]})
"""


def tool(name: str) -> str:
    """A console script installed beside the running Python (`dg`, `create-dagster`)."""
    return str(Path(sys.executable).parent / name)


def dg_env(root: Path, project: Path, **extra: str) -> dict[str, str]:
    """The environment `dg` runs in: ``project`` importable, the DAGSTER_HOME under ``root``, no
    telemetry."""
    home = root / "dagster_home"
    home.mkdir(exist_ok=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    env = dict(os.environ)
    env.pop(FEED_DOWN, None)
    env.update(
        {
            "PYTHONPATH": os.pathsep.join([str(project / "src"), os.getcwd()]),
            "DAGSTER_HOME": str(home),
            "DAGSTER_DISABLE_TELEMETRY": "1",
            **extra,
        }
    )
    return env


def run_tool(root: Path, *command: str, cwd: Path | None = None, **env: str):
    """Run one command in the project; its completed process (output as text)."""
    cwd = cwd or root / PROJECT
    return subprocess.run(
        list(command),
        cwd=cwd,
        env=dg_env(root, cwd, **env),
        capture_output=True,
        text=True,
        timeout=600,
    )


def create_project(root: Path) -> Path:
    """`create-dagster project shop`, its assets in `defs/sales.py`, and the receipts component
    scaffolded by `dg scaffold defs`; returns the project folder."""
    made = run_tool(root, tool("create-dagster"), "project", PROJECT, "--no-uv-sync", cwd=root)
    assert made.returncode == 0, made.stdout + made.stderr
    project = root / PROJECT
    (project / "src" / PROJECT / "defs" / "sales.py").write_text(SALES, encoding="utf-8")
    scaffolded = run_tool(root, tool("dg"), "scaffold", "defs", COMPONENT_TYPE, "receipts")
    assert scaffolded.returncode == 0, scaffolded.stdout + scaffolded.stderr
    return project


def copy_project(made: Path, root: Path) -> Path:
    """A copy in ``root`` of a project ``create_project`` made (the session's, shared by the
    workers: `create-dagster` and `dg scaffold` run once); returns the copy's folder."""
    return Path(shutil.copytree(made, root / PROJECT))


def receipts_yaml(project: Path) -> Path:
    """The component's `defs.yaml`."""
    return project / "src" / PROJECT / "defs" / "receipts" / "defs.yaml"
