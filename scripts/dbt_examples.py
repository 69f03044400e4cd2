"""Regenerate the outputs docs/dbt.md shows (a dbt model's `lineage trace`, the `lineage diff`
after a seed changes, the drift sensor's tick over a non-deterministic model) from a real run,
or check that they still agree with one.

The example's dbt project (example_project/dbt_shop) is built in a temporary home as the quick
start builds it: `dbt build`, one seed changed, `dbt build` again; then a model drawing
`random()` is added to that home's copy and built twice, and the drift sensor ticks once. Each
block follows a marker line `<!-- dbt-output: <name> -->` and is replaced whole.

    python scripts/dbt_examples.py            # rewrite the blocks
    python scripts/dbt_examples.py --check    # exit 1 when a block and a fresh run disagree

What changes between runs (run ids, times, durations, digests, versions) is compared normalised,
as `readme_examples.normalised` does.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import io
import itertools
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "dbt.md"
TAG = "dbt-output"
BLOCKS = ("trace", "diff", "drift-tick")
MARKER = re.compile(
    rf"^<!-- {TAG}: (?P<name>[a-z-]+) -->\n```(?P<lang>\w*)\n.*?^```\n", re.M | re.S
)
#: The model drawing a number per order on every build: its rows change with nothing else.
LUCKY_DRAW = "select order_id, random() as draw from {{ ref('raw_orders') }}\n"
#: Packages shown in the trace's environment (the rest is abridged to "…").
SHOWN_PACKAGES = ("dagster", "dbt-core", "dbt-duckdb", "duckdb")


# The shared helpers of the README's examples (marked blocks, normalising), from beside this file.
sys.path.insert(0, str(ROOT / "scripts"))
examples = importlib.import_module("readme_examples")


def cli_output(*args: str, allowed: tuple[int, ...] = (0,)) -> str:
    """`ubunye-dagster lineage ...` run here, with `$ ...` and its output."""
    from ubunye_core.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["lineage", *args])
    if code not in allowed:
        raise SystemExit(f"ubunye-dagster lineage {' '.join(args)} failed ({code})")
    return f"$ ubunye-dagster lineage {' '.join(args)}\n{out.getvalue()}"


def _abridged(line: str) -> bool:
    """True for a package line of the trace's environment that is not shown."""
    name = line.split(":", 1)[0].strip(" │├└─")
    kept = ("code", "python", *SHOWN_PACKAGES)
    return line.startswith("│   ├── ") and " : " in line and name not in kept


def trimmed_trace(text: str) -> str:
    """The trace with only the shown packages of its environment (each run of the others one
    "…" line)."""
    kept: list[str] = []
    for abridged, lines in itertools.groupby(text.splitlines(), key=_abridged):
        kept += ["│   ├── …"] if abridged else [line.rstrip() for line in lines]
    return "\n".join(kept) + "\n"


def seed_change_blocks(build: bool = True) -> dict[str, str]:
    """The quick start's dbt half in the current folder (run first unless ``build`` is False:
    the folder holds a home where it ran): its trace and `lineage diff`."""
    import dagster as dg

    from example_project.definitions import USECASE
    from example_project.run import (
        DIFFED_DBT_MODEL,
        TRACED_DBT_MODEL,
        build_dbt_before_and_after_a_seed_change,
    )

    if build:
        with dg.DagsterInstance.ephemeral() as instance:
            build_dbt_before_and_after_a_seed_change(Path("."), instance)
    where = ("-d", ".", "-u", USECASE)
    return {
        "trace": trimmed_trace(cli_output("trace", *where, "--asset", TRACED_DBT_MODEL)),
        # Exit status 1: the two versions differ, as they should.
        "diff": cli_output(
            "diff", *where, "--asset", DIFFED_DBT_MODEL, "--key", "order_id", allowed=(1,)
        ),
    }


def drift_tick_block() -> str:
    """The drift sensor's tick after the random model is built twice (its skip reason)."""
    import dagster as dg

    from example_project.dbt_models import dbt_working_copy
    from example_project.run import build_dbt_models
    from ubunye_dagster import build_drift_sensor

    home = Path(".")
    (dbt_working_copy(home) / "models" / "lucky_draw.sql").write_text(LUCKY_DRAW, encoding="utf-8")
    with dg.DagsterInstance.ephemeral() as instance:
        build_dbt_models(home, instance)
        build_dbt_models(home, instance)
        tick = build_drift_sensor(None).evaluate_tick(dg.build_sensor_context(instance=instance))
    return f"{tick.skip_message}\n"


def fresh_blocks(built: Path | None = None) -> dict[str, str]:
    """Every block of the page, from a real run in a temporary folder (a copy of ``built``, a
    home where the quick start's dbt half ran, when given: the tests build it once)."""
    if str(ROOT) not in sys.path:  # the example project is a folder of the repository
        sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="ubunye-dbt-docs-") as folder:
        if built is not None:
            # Not the lineage index: a reader of ``built`` may be writing it; the copy's own
            # index is built from the record files.
            index = shutil.ignore_patterns(".ubunye-index.sqlite3*")
            shutil.copytree(built, folder, ignore=index, dirs_exist_ok=True)
        previous = Path.cwd()
        os.chdir(folder)
        try:
            blocks = seed_change_blocks(build=built is None)
            blocks["drift-tick"] = drift_tick_block()
        finally:
            os.chdir(previous)
        real = str(Path(folder).resolve())
        return {name: text.replace(real, ".").replace(folder, ".") for name, text in blocks.items()}


def _block_diff(name: str, shown: str, fresh: str) -> str:
    """The unified diff of a shown block against its fresh text, both normalised."""
    before, after = (examples.normalised(text).splitlines() for text in (shown, fresh))
    lines = difflib.unified_diff(before, after, f"docs/dbt.md {name}", f"fresh {name}", lineterm="")
    return "\n".join(lines) + "\n"


def disagreements(text: str, fresh: dict[str, str], marker: re.Pattern[str] = MARKER) -> list[str]:
    """A unified diff per block (found by ``marker``) the fresh run does not reproduce
    (normalised), and a line for each block the page lacks."""
    shown = examples.readme_blocks(text, marker)
    missing = [f"docs/dbt.md has no block marked {name!r}\n" for name in fresh if name not in shown]
    return missing + [
        _block_diff(name, shown[name], block)
        for name, block in fresh.items()
        if name in shown and examples.normalised(shown[name]) != examples.normalised(block)
    ]


def check_or_rewrite(
    argv: list[str] | None,
    description: str,
    fresh: Callable[[], dict[str, str]],
    marker: re.Pattern[str] = MARKER,
    tag: str = TAG,
) -> int:
    """docs/dbt.md's blocks marked ``<!-- TAG: name -->`` rewritten from a ``fresh`` run, or with
    ``--check`` in ``argv`` compared with one (1 when they disagree)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="compare, do not rewrite")
    args = parser.parse_args(argv)
    text = DOC.read_text(encoding="utf-8")
    blocks = fresh()
    if args.check:
        problems = disagreements(text, blocks, marker)
        sys.stdout.write("".join(problems) or "docs/dbt.md agrees with a fresh run\n")
        return 1 if problems else 0
    DOC.write_text(examples.rewritten(text, blocks, marker, tag), encoding="utf-8")
    print(f"rewrote {', '.join(examples.readme_blocks(text, marker))} in docs/dbt.md")
    return 0


if __name__ == "__main__":
    sys.exit(check_or_rewrite(None, __doc__.split("\n\n")[0], fresh_blocks))
