"""The project's distributions built as they are released (the ubunye-rows sdist and its abi3
manylinux wheel, maturin linking with zig against glibc 2.17; the ubunye-dagster sdist and
pure-Python wheel), and fresh venvs holding them: for the wheel test and for the deployment
test's code location.

:func:`built_distributions` builds each distribution once per content of its sources, in the
test cache folder (``$UBUNYE_TEST_CACHE``), so the two tests, and a later session on the same
sources, share it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from external_python import built_once, cache_root, sources_digest

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

#: The rows wheel's tag: glibc 2.17, the oldest a Rust extension can target (Rust's standard
#: library needs 2.17), so the widest manylinux tag there is.
MANYLINUX = "manylinux2014"
MANYLINUX_PLATFORM = f"manylinux_2_17_{platform.machine()}"


def outside_repository(**extra: str) -> dict[str, str]:
    """This process's environment without the repository on the Python path, ``extra`` added."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**base, **extra}


def run(
    command: list[str], cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in ``cwd`` with ``env`` (default: :func:`outside_repository`); fail with
    its output."""
    result = subprocess.run(
        command,
        cwd=cwd,
        env=dict(env) if env is not None else outside_repository(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, f"{command}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def build_sdist(source: Path, outdir: Path) -> Path:
    """``python -m build --sdist`` of ``source`` into ``outdir``."""
    run([sys.executable, "-m", "build", "--sdist", "--outdir", str(outdir), str(source)], outdir)
    [sdist] = outdir.glob("*.tar.gz")
    return sdist


def build_rows(outdir: Path) -> tuple[Path, Path]:
    """The ubunye-rows sdist and the abi3 manylinux wheel maturin builds from it, zig linking
    against glibc 2.17."""
    sdist = build_sdist(ROOT / "rows", outdir)
    with tarfile.open(sdist) as archive:
        archive.extractall(outdir / "unpacked", filter="data")
    [source] = (outdir / "unpacked").iterdir()
    dated_now(source)
    command = [sys.executable, "-m", "maturin", "build", "--release", "--locked", "--zig"]
    command += ["--compatibility", MANYLINUX, "--out", str(outdir)]
    # The compiled crates are kept in the checkout's target folder, so a second session builds
    # only the kernel's own crate; zig is this interpreter's (the `ziglang` package).
    env = outside_repository(
        CARGO_TARGET_DIR=str(ROOT / "rows" / "target"), CARGO_ZIGBUILD_PYTHON_PATH=sys.executable
    )
    run(command, cwd=source, env=env)
    [wheel] = outdir.glob("*.whl")
    return sdist, wheel


def dated_now(folder: Path) -> None:
    """Date every file under ``folder`` now. maturin's sdist dates its files 2006, and cargo
    judges a path crate fresh by its files' times: the shared target folder's kernel, built
    from an earlier sdist, would be taken as this one's."""
    now = time.time()
    for path in folder.rglob("*"):
        os.utime(path, (now, now))


def build_pure_python(source: Path, outdir: Path) -> tuple[Path, Path]:
    """``python -m build`` of ``source``: the sdist, then the wheel built from that sdist."""
    run([sys.executable, "-m", "build", "--outdir", str(outdir), str(source)], cwd=outdir)
    [sdist] = outdir.glob("*.tar.gz")
    [wheel] = outdir.glob("*.whl")
    return sdist, wheel


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


def _sources_digest(distribution: Distribution) -> str:
    """A digest of every file git tracks or would track (not ignored) in ``distribution``'s
    sources: an edit, committed or not, builds it anew. The rows distribution is ``rows/``; the
    other is everything else at the top and in its packages (``rows/`` holds none of it)."""
    prefix = distribution.source.relative_to(ROOT).as_posix() + "/"
    owned = ("rows/",) if prefix == "rows/" else tuple(f"{p}/" for p in distribution.packages)
    top = prefix == "./"
    return sources_digest((), lambda name: name.startswith(owned) or (top and "/" not in name))


#: How each distribution is built into a folder: the sdist and the wheel.
BUILDERS: tuple[Callable[[Path], object], ...] = (
    build_rows,
    lambda folder: build_pure_python(ROOT, folder),
)


@functools.cache
def built_distributions() -> tuple[tuple[Path, Path], ...]:
    """``(sdist, wheel)`` of each distribution, in ``DISTRIBUTIONS`` order, each built once per
    content of its own sources (so a change to the glue does not rebuild the kernel's wheel)."""
    built = []
    for index, (distribution, build) in enumerate(zip(DISTRIBUTIONS, BUILDERS, strict=True)):
        name = f"{index}-{_sources_digest(distribution)}"
        ready = built_once(cache_root().parent / "wheels" / name, build)
        [sdist] = ready.glob("*.tar.gz")
        [wheel] = ready.glob("*.whl")
        built.append((sdist, wheel))
    return tuple(built)


def install_wheels(
    venv: Path, requirements: Sequence[str], env: Mapping[str, str], *, build: bool = True
) -> Path:
    """A new venv at ``venv`` (this interpreter's Python) with ``requirements`` installed by uv,
    every other distribution pinned to its version here; its interpreter. ``build=False``
    installs from wheels only."""
    uv = [sys.executable, "-m", "uv"]
    run([*uv, "venv", "--quiet", "--python", sys.executable, str(venv)], cwd=venv.parent, env=env)
    python = venv / "bin" / "python"
    own = {normalised(wheel.name.split("-")[0]) for _, wheel in built_distributions()}
    constraints = constraints_of_this_environment(venv.parent / f"{venv.name}-pins.txt", own)
    install = [*uv, "pip", "install", "--quiet", "--python", str(python), "-c", str(constraints)]
    run([*install, *([] if build else ["--no-build"]), *requirements], cwd=venv.parent, env=env)
    return python
