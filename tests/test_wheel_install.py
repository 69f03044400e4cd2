"""The package installs like one: ``python -m build`` gives an sdist and a wheel with all they
must hold, and the wheel, installed into a fresh venv, runs a small Dagster project and the
``ubunye-dagster`` CLI from a folder outside the repository.

Slow (two builds, a venv, an install): select with ``-m wheel``. Dependencies come from PyPI or
uv's cache, pinned to the versions of the running environment, so the fresh venv runs beside the
same Dagster the rest of the suite runs on.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from ubunye_rows import fingerprint

pytest.importorskip("build.env")  # the `build` frontend (dev extra), not a stray build/ folder
pytestmark = pytest.mark.wheel

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Distribution:
    """One distribution the project publishes: its source folder, packages and sdist extras."""

    source: Path
    packages: tuple[str, ...]
    #: Files besides the packages' modules that the sdist must carry, relative to ``source``.
    sdist_files: tuple[str, ...]


#: Every distribution the project publishes, built and installed together, the one the other
#: depends on first.
DISTRIBUTIONS = (
    Distribution(
        ROOT / "rows",
        ("ubunye_rows",),
        ("README.md", "pyproject.toml", "ubunye_rows/testing/golden_rows_v1.json"),
    ),
    Distribution(
        ROOT, ("ubunye_core", "ubunye_dagster"), ("README.md", "LICENSE", "pyproject.toml")
    ),
)
TIMEOUT = 900

PROJECT = textwrap.dedent(
    '''
    """A team's small Dagster project: two pandas assets stored through UbunyeIOManager."""
    import json
    import sys

    import dagster as dg
    import pandas as pd

    import ubunye_dagster
    from ubunye_dagster import UbunyeIOManager, UbunyeResource


    @dg.asset
    def orders() -> pd.DataFrame:
        return pd.DataFrame({"order_id": [1, 2, 3], "amount": [9.5, None, 4.0]})


    @dg.asset
    def order_totals(orders: pd.DataFrame) -> pd.DataFrame:
        return orders.assign(total=orders["amount"].fillna(0) * 2)


    io_manager = UbunyeIOManager(base_path="data", ubunye=UbunyeResource(usecase_dir="."))
    result = dg.materialize([orders, order_totals], resources={"io_manager": io_manager})
    json.dump(
        {"success": result.success, "run_id": result.run_id, "module": ubunye_dagster.__file__},
        sys.stdout,
    )
    '''
)


def expected_frames() -> dict[str, pd.DataFrame]:
    """The frames the project's two assets write, built here to hash them independently."""
    orders = pd.DataFrame({"order_id": [1, 2, 3], "amount": [9.5, None, 4.0]})
    return {"orders": orders, "order_totals": orders.assign(total=orders["amount"].fillna(0) * 2)}


def run(
    command: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in ``cwd`` without the repository on the path (``env`` added); fail with
    its output."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env = {**base, **(env or {})}
    result = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    assert result.returncode == 0, f"{command}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def build(source: Path, outdir: Path) -> tuple[Path, Path]:
    """``python -m build`` of ``source`` (the sdist, then the wheel built from that sdist)."""
    # The kernel's crates, compiled once by the editable install, are reused from its target
    # folder: the wheel is still built from the unpacked sdist, only the compiler's cache is
    # shared (a minute and a half less).
    cargo = {"CARGO_TARGET_DIR": str(ROOT / "rows" / "target")}
    command = [sys.executable, "-m", "build", "--outdir", str(outdir), str(source)]
    run(command, cwd=outdir, env=cargo)
    [sdist] = outdir.glob("*.tar.gz")
    [wheel] = outdir.glob("*.whl")
    return sdist, wheel


def module_files(dist: Distribution) -> set[str]:
    """Every file of ``dist``'s packages that git tracks (modules and data), relative to its
    source folder."""
    listed = run(["git", "ls-files", "--", *dist.packages], cwd=dist.source).stdout.split()
    assert listed, f"git lists no file of {dist.packages}"
    return set(listed)


def normalised(name: str) -> str:
    """A distribution name as pip compares it (PEP 503)."""
    return name.lower().replace("_", "-").replace(".", "-")


def constraints_of_this_environment(path: Path, own: set[str]) -> Path:
    """A pip constraints file pinning every distribution of the running environment (but the
    ``own`` ones being built) to its version here: the fresh venv gets the same Dagster, from
    uv's cache."""
    pins = sorted(
        f"{dist.metadata['Name']}=={dist.version}"
        for dist in importlib.metadata.distributions()
        if dist.metadata["Name"] and normalised(dist.metadata["Name"]) not in own
    )
    path.write_text("\n".join(pins) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> list[tuple[Path, Path]]:
    """``(sdist, wheel)`` of each distribution, built into its own folder."""
    built = []
    for index, dist in enumerate(DISTRIBUTIONS):
        built.append(build(dist.source, tmp_path_factory.mktemp(f"dist-{index}")))
    return built


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory) -> Path:
    """A fresh venv with the built wheels installed (by uv: seconds, where pip takes a minute);
    its bin/."""
    folder = tmp_path_factory.mktemp("fresh-venv")
    home = folder / "venv"
    uv = [sys.executable, "-m", "uv"]
    run([*uv, "venv", "--quiet", str(home)], cwd=folder)
    bin_dir = home / ("Scripts" if os.name == "nt" else "bin")
    own = {normalised(wheel.name.split("-")[0]) for _, wheel in built}
    constraints = constraints_of_this_environment(folder / "constraints.txt", own)
    wheels = [str(wheel) for _, wheel in built]
    install = [*uv, "pip", "install", "--quiet", "--python", str(bin_dir / "python")]
    run([*install, "-c", str(constraints), *wheels], cwd=folder)
    return bin_dir


@pytest.mark.parametrize(
    "index", range(len(DISTRIBUTIONS)), ids=lambda i: DISTRIBUTIONS[i].source.name
)
def test_the_sdist_holds_the_readme_the_licence_and_every_module_and_data_file(built, index):
    dist, (sdist, _) = DISTRIBUTIONS[index], built[index]
    with tarfile.open(sdist) as archive:
        top = archive.getnames()[0].split("/")[0]
        names = {name.removeprefix(f"{top}/") for name in archive.getnames()}
    assert set(dist.sdist_files) <= names
    assert module_files(dist) <= names


def test_the_rows_wheel_holds_every_module_and_its_golden_vectors(built):
    dist, (_, wheel) = DISTRIBUTIONS[0], built[0]
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert module_files(dist) <= names
    assert not {name for name in names if name.startswith(("ubunye_core/", "ubunye_dagster/"))}


def test_the_wheel_holds_every_module_its_data_the_licence_and_the_cli(built):
    dist, (_, wheel) = DISTRIBUTIONS[1], built[1]
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        [dist_info] = {name.split("/")[0] for name in names if ".dist-info/" in name}
        metadata = archive.read(f"{dist_info}/METADATA").decode()
        entry_points = archive.read(f"{dist_info}/entry_points.txt").decode()
    assert module_files(dist) <= names
    assert f"{dist_info}/licenses/LICENSE" in names
    assert "License-Expression: MIT" in metadata
    assert "ubunye-dagster = ubunye_core.cli:main" in entry_points
    assert not {name for name in names if name.startswith(("tests/", "example_project/", "rows/"))}
    assert "Requires-Dist: ubunye-rows==" in metadata


def test_the_installed_wheel_runs_a_dagster_project_outside_the_repository(installed, tmp_path):
    (tmp_path / "shop.py").write_text(PROJECT, encoding="utf-8")

    report = json.loads(run([str(installed / "python"), "shop.py"], cwd=tmp_path).stdout)

    assert report["success"] is True
    assert Path(report["module"]).is_relative_to(installed.parent)  # the wheel's, not the repo's
    for name, frame in expected_frames().items():
        trace = run(
            [str(installed / "ubunye-dagster"), "lineage", "trace", "-d", ".", "--asset", name,
             "--json"],
            cwd=tmp_path,
        )  # fmt: skip
        record = json.loads(trace.stdout)
        [output] = record["outputs"]
        assert (record["run_id"], record["status"]) == (report["run_id"], "success")
        assert (output["data_hash"], output["row_count"]) == (fingerprint(frame).data_hash, 3)
    listing = run(
        [str(installed / "ubunye-dagster"), "lineage", "list", "-d", ".", "--asset", "orders"],
        cwd=tmp_path,
    )
    assert report["run_id"][:8] in listing.stdout
