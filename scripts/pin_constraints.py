"""Pin every package of the development install in constraints/dev.txt, so that the README's
install line and .ci/run resolve without backtracking.

The file is `uv pip compile --universal` of both distributions with every extra CI installs
(every Python from 3.10, every platform), less the two distributions themselves, which are
installed from the checkout. Without a resolved set pip walks back through each Dagster release
to find the one the newest dagster-pyspark names.

    python scripts/pin_constraints.py             # re-resolve, keeping the pins that still fit
    python scripts/pin_constraints.py --upgrade   # move every pin to the newest release that fits
    python scripts/pin_constraints.py --check     # exit 1 when a fresh resolve would change it
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = ROOT / "constraints" / "dev.txt"
# Every extra .ci/run installs; the README's quick start installs a subset of them. Left out:
# duckdb-pandas, whose pandas<3 the suite's pandas refuses (.ci/run installs it without its deps).
EXTRAS = ("spark", "polars", "delta", "slack", "dbt", "dbt-postgres", "dbt-spark", "dev")
OLDEST_PYTHON = "3.10"
REGENERATE = "python scripts/pin_constraints.py"


def requirements() -> str:
    """What is resolved: both distributions from the checkout, with the extras, on Dagster 1."""
    return f"-e ./rows\n-e .[{','.join(EXTRAS)}]\ndagster>=1.10,<2\n"


def compile_into(output: Path, *, upgrade: bool) -> None:
    """Resolve :func:`requirements` with uv into ``output`` (its pins kept unless ``upgrade``)."""
    command = [
        sys.executable,
        "-m",
        "uv",
        "pip",
        "compile",
        "--quiet",
        "--universal",
        "--python-version",
        OLDEST_PYTHON,
        "--no-emit-package",
        "ubunye-rows",
        "--no-emit-package",
        "ubunye-dagster",
        "--annotation-style",
        "line",
        "--custom-compile-command",
        REGENERATE,
        "--output-file",
        str(output),
        "-",
    ]
    if upgrade:
        command.append("--upgrade")
    subprocess.run(command, input=requirements(), text=True, cwd=ROOT, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upgrade", action="store_true", help="newest releases that fit")
    parser.add_argument("--check", action="store_true", help="compare a fresh resolve, write none")
    args = parser.parse_args(argv)
    if not args.check:
        CONSTRAINTS.parent.mkdir(exist_ok=True)
        compile_into(CONSTRAINTS, upgrade=args.upgrade)
        return 0
    with tempfile.TemporaryDirectory() as folder:
        fresh = Path(folder) / "dev.txt"
        if CONSTRAINTS.exists():
            fresh.write_text(CONSTRAINTS.read_text(encoding="utf-8"), encoding="utf-8")
        compile_into(fresh, upgrade=args.upgrade)
        if CONSTRAINTS.exists() and fresh.read_text(encoding="utf-8") == CONSTRAINTS.read_text(
            encoding="utf-8"
        ):
            return 0
    print(
        f"{CONSTRAINTS.relative_to(ROOT)} is not what pyproject.toml resolves to: run {REGENERATE}"
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
