"""The packages install the way teams deploy them, without a Rust toolchain: ubunye-rows is one
abi3 manylinux wheel (its sdist, built by maturin with zig as the linker, the tag proved by
``auditwheel``), ubunye-dagster a pure-Python wheel, and both, installed into a fresh venv whose
PATH finds no ``cargo`` or ``rustc``, pass the rows-v1 conformance suite on the native kernel and
run a Dagster project and the ``ubunye-dagster`` CLI from a folder outside the repository.

Slow (two sdists, two wheels, a venv, an install): select with ``-m wheel``. Linux only (the
manylinux tag). Dependencies come from PyPI or uv's cache, pinned to the versions of the running
environment, so the fresh venv runs beside the same Dagster the rest of the suite runs on.
"""

from __future__ import annotations

import json
import shutil
import sys
import tarfile
import textwrap
import xml.etree.ElementTree as ElementTree
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from packaging.utils import parse_wheel_filename
from wheel_builds import (
    DISTRIBUTIONS,
    MANYLINUX_PLATFORM,
    ROOT,
    Distribution,
    built_distributions,
    install_wheels,
    outside_repository,
    run,
)

from ubunye_rows import fingerprint
from ubunye_rows.testing.backend_conformance import vectors_for

pytest.importorskip("build.env")  # the `build` frontend (dev extra), not a stray build/ folder
pytest.importorskip("maturin")
pytest.importorskip("ziglang")
pytest.importorskip("auditwheel")
pytestmark = [
    pytest.mark.wheel,
    pytest.mark.skipif(sys.platform != "linux", reason="the manylinux wheel is built on Linux"),
]

#: The compiled kernel, the one file of the rows wheel that git does not track.
KERNEL = "ubunye_rows/_kernel.abi3.so"
#: The stripped kernel is under 2 MB and its wheel under 1 MB; past this bound something else
#: went in (debug symbols, a build folder).
MAX_ROWS_WHEEL_BYTES = 4_000_000
#: The conformance suite's files in tests/ that need nothing but pytest, pandas and ubunye-rows.
CONFORMANCE_FILES = {"test_conformance_arrow.py": "arrow", "test_conformance_pandas.py": "pandas"}
#: Environment variables that point a build at a Rust toolchain (cargo, rustup, rustc, maturin).
TOOLCHAIN_PREFIXES = ("CARGO", "RUSTUP", "RUSTC", "RUSTDOC", "RUSTFLAGS", "MATURIN", "PYO3")

PROJECT = textwrap.dedent(
    '''
    """A team's small Dagster project: two pandas assets stored through UbunyeIOManager."""
    import json
    import sys

    import dagster as dg
    import pandas as pd

    import ubunye_dagster
    from ubunye_dagster import UbunyeIOManager, UbunyeResource
    from ubunye_rows import _kernel
    from ubunye_rows.hashing import native


    @dg.asset
    def orders() -> pd.DataFrame:
        return pd.DataFrame({"order_id": [1, 2, 3], "amount": [9.5, None, 4.0]})


    @dg.asset
    def order_totals(orders: pd.DataFrame) -> pd.DataFrame:
        return orders.assign(total=orders["amount"].fillna(0) * 2)


    io_manager = UbunyeIOManager(base_path="data", ubunye=UbunyeResource(usecase_dir="."))
    result = dg.materialize([orders, order_totals], resources={"io_manager": io_manager})
    json.dump(
        {
            "success": result.success,
            "run_id": result.run_id,
            "module": ubunye_dagster.__file__,
            "kernel": _kernel.__file__,
            "fallbacks": dict(native.fallbacks),
        },
        sys.stdout,
    )
    '''
)


@dataclass(frozen=True)
class FreshVenv:
    """A venv holding the built wheels, and the toolchain-free environment it runs in."""

    bin_dir: Path
    env: dict[str, str]

    @property
    def python(self) -> str:
        return str(self.bin_dir / "python")


def expected_frames() -> dict[str, pd.DataFrame]:
    """The frames the project's two assets write, built here to hash them independently."""
    orders = pd.DataFrame({"order_id": [1, 2, 3], "amount": [9.5, None, 4.0]})
    return {"orders": orders, "order_totals": orders.assign(total=orders["amount"].fillna(0) * 2)}


def module_files(dist: Distribution) -> set[str]:
    """Every file of ``dist``'s packages that git tracks (modules and data), relative to its
    source folder."""
    listed = run(["git", "ls-files", "--", *dist.packages], cwd=dist.source).stdout.split()
    assert listed, f"git lists no file of {dist.packages}"
    return set(listed)


def wheel_contents(wheel: Path) -> tuple[set[str], set[str]]:
    """The wheel's package files and its ``.dist-info`` files, apart."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    info = {name for name in names if name.split("/")[0].endswith(".dist-info")}
    return names - info, info


def toolchain_free_environment(bin_dir: Path, empty: Path) -> dict[str, str]:
    """The fresh venv's environment: PATH is its bin/ alone, no variable names a Rust toolchain,
    and cargo's and rustup's homes are empty folders, so nothing there can find cargo or rustc."""
    env = {k: v for k, v in outside_repository().items() if not k.startswith(TOOLCHAIN_PREFIXES)}
    for home in ("CARGO_HOME", "RUSTUP_HOME"):
        env[home] = str(empty / home.lower())
        Path(env[home]).mkdir(parents=True)
    env.update(PATH=str(bin_dir), UBUNYE_HASH_KERNEL="auto")
    return env


@pytest.fixture(scope="session")
def built() -> tuple[tuple[Path, Path], ...]:
    """``(sdist, wheel)`` of each distribution, in ``DISTRIBUTIONS`` order (tests/wheel_builds.py:
    built once per content of the sources)."""
    return built_distributions()


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory) -> FreshVenv:
    """A fresh venv with the built wheels and pytest installed (by uv, from wheels only: seconds,
    where pip takes a minute), in an environment where no Rust toolchain can be found."""
    folder = tmp_path_factory.mktemp("fresh-venv")
    bin_dir = folder / "venv" / "bin"
    env = toolchain_free_environment(bin_dir, folder / "no-toolchain")
    assert [tool for tool in ("cargo", "rustc") if shutil.which(tool, path=env["PATH"])] == []
    wheels = [str(wheel) for _, wheel in built]
    install_wheels(folder / "venv", [*wheels, "pytest"], env, build=False)
    return FreshVenv(bin_dir, env)


@pytest.mark.parametrize(
    "index", range(len(DISTRIBUTIONS)), ids=lambda i: DISTRIBUTIONS[i].packages[0]
)
def test_the_sdist_holds_the_readme_the_licence_and_every_module_and_data_file(built, index):
    dist, (sdist, _) = DISTRIBUTIONS[index], built[index]
    with tarfile.open(sdist) as archive:
        top = archive.getnames()[0].split("/")[0]
        names = {name.removeprefix(f"{top}/") for name in archive.getnames()}
    assert set(dist.sdist_files) <= names
    assert module_files(dist) <= names


def test_the_rows_wheel_is_abi3_and_auditwheel_finds_it_manylinux_2014(built):
    _, wheel = built[0]
    _, _, _, tags = parse_wheel_filename(wheel.name)

    shown = run([sys.executable, "-m", "auditwheel", "show", str(wheel)], cwd=wheel.parent)

    assert {(tag.interpreter, tag.abi) for tag in tags} == {("cp310", "abi3")}
    assert MANYLINUX_PLATFORM in {tag.platform for tag in tags}
    consistent = " ".join(shown.stdout.split())
    assert f'consistent with the following platform tag: "{MANYLINUX_PLATFORM}"' in consistent


def test_the_rows_wheel_holds_its_kernel_every_module_and_nothing_else(built):
    dist, (_, wheel) = DISTRIBUTIONS[0], built[0]

    files, _ = wheel_contents(wheel)

    assert files == module_files(dist) | {KERNEL}  # the .pyi too, once git tracks one
    assert wheel.stat().st_size < MAX_ROWS_WHEEL_BYTES


def test_the_dagster_wheel_is_pure_python_with_every_module_its_data_the_licence_and_the_cli(
    built,
):
    dist, (_, wheel) = DISTRIBUTIONS[1], built[1]
    _, _, _, tags = parse_wheel_filename(wheel.name)
    files, info = wheel_contents(wheel)
    [dist_info] = {name.split("/")[0] for name in info}
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(f"{dist_info}/METADATA").decode()
        entry_points = archive.read(f"{dist_info}/entry_points.txt").decode()
    assert {str(tag) for tag in tags} == {"py3-none-any"}
    assert files == module_files(dist)
    assert f"{dist_info}/licenses/LICENSE" in info
    assert "License-Expression: MIT" in metadata
    assert "ubunye-dagster = ubunye_core.cli:main" in entry_points
    assert "Requires-Dist: ubunye-rows==" in metadata


def test_the_installed_wheels_pass_the_conformance_suite_on_the_kernel_without_rust(
    installed, tmp_path
):
    for name in CONFORMANCE_FILES:
        shutil.copy(ROOT / "tests" / "unit" / name, tmp_path / name)
    report = tmp_path / "report.xml"
    # The kernel's absence would be a warning (and the Python path the same digests): an error.
    missing_kernel = "error::ubunye_rows.hashing.native.KernelMissingWarning"
    pytest_args = ["-p", "no:cacheprovider", "-W", missing_kernel, f"--junitxml={report}"]

    run(
        [installed.python, "-m", "pytest", *pytest_args, *CONFORMANCE_FILES],
        tmp_path,
        installed.env,
    )

    cases = ElementTree.parse(report).getroot().iter("testcase")
    passed = {(case.get("classname"), case.get("name")) for case in cases if not len(case)}
    for file, engine in CONFORMANCE_FILES.items():
        classes = {classname for classname, _ in passed if classname.startswith(file[:-3])}
        assert classes, f"no test of {file} passed"
        for classname in classes:
            ran = {name for cls, name in passed if cls == classname}
            golden = {
                f"test_golden_vector_gives_the_reference_digest[{v.name}]"
                for v in vectors_for(engine)
            }
            assert golden <= ran, f"{classname}: {sorted(golden - ran)} did not pass"


def test_the_installed_wheels_run_a_dagster_project_outside_the_repository(installed, tmp_path):
    (tmp_path / "shop.py").write_text(PROJECT, encoding="utf-8")

    report = json.loads(run([installed.python, "shop.py"], tmp_path, installed.env).stdout)

    assert report["success"] is True
    venv = installed.bin_dir.parent
    assert Path(report["module"]).is_relative_to(venv)  # the wheel's, not the repository's
    assert Path(report["kernel"]).is_relative_to(venv)
    assert report["fallbacks"] == {}  # every column was hashed by the wheel's kernel
    cli = str(installed.bin_dir / "ubunye-dagster")
    for name, frame in expected_frames().items():
        trace = run(
            [cli, "lineage", "trace", "-d", ".", "--asset", name, "--json"], tmp_path, installed.env
        )
        record = json.loads(trace.stdout)
        [output] = record["outputs"]
        assert (record["run_id"], record["status"]) == (report["run_id"], "success")
        assert (output["data_hash"], output["row_count"]) == (fingerprint(frame).data_hash, 3)
    listing = run([cli, "lineage", "list", "-d", ".", "--asset", "orders"], tmp_path, installed.env)
    assert report["run_id"][:8] in listing.stdout
