"""Regenerate the documented example outputs (the record, `lineage trace`, `lineage compare`,
`lineage diff`, the drift sensor's flagged tick and its `on_drift` verdict, a DuckDB table's
trace) from a real run, or
check that they still agree with one.

A small shop is materialised twice in a temporary folder through `UbunyeIOManager`: `sales/raw`
and `sales/orders`, whose filter is edited between the runs. The example project's
`sales/price_list` (a Delta table) is materialised twice, the second time with its price rise,
for `lineage diff`. A model score drawn without a seed is materialised twice and judged by the
drift sensor, for its tick and verdict. Each block, in README.md or any page under docs/,
follows a marker line `<!-- readme-example: <name> -->` and is replaced whole. A trace of two
assets stored in DuckDB through `with_receipts` needs dagster-duckdb-pandas (`.ci/run` installs
it); without it that block is neither rewritten nor checked.

    python scripts/readme_examples.py            # rewrite the blocks where they are
    python scripts/readme_examples.py --check    # exit 1 when a block and a fresh run disagree

Run ids, times, durations, digests and package versions change from run to run and machine to
machine; `--check` compares the blocks with those normalised.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib.util
import io
import json
import os
import re
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MARKER = re.compile(
    r"^<!-- readme-example: (?P<name>[a-z-]+) -->\n```(?P<lang>\w*)\n.*?^```\n", re.M | re.S
)

#: The asset module of the example, before and after the filter is edited.
ASSETS = textwrap.dedent(
    """
    import dagster as dg
    import pandas as pd


    @dg.asset(key_prefix="sales", group_name="sales")
    def raw() -> pd.DataFrame:
        return pd.DataFrame({"id": [1, 2, 3, 4], "amount": [12.5, 3.0, 40.0, 7.25]})


    @dg.asset(
        key_prefix="sales",
        group_name="sales",
        metadata={"ubunye/expectations": [{"not_null": "id"}, {"row_count": {"min": 1}}]},
    )
    def orders(raw: pd.DataFrame) -> pd.DataFrame:
        return raw[raw["amount"] > MINIMUM]
    """
)
MINIMUMS = ("5.0", "10.0")
#: Record keys shown for each input and output step (the rest is abridged to "…").
STEP_KEYS = ("name", "direction", "format", "row_count", "schema_hash", "data_hash", "hash_method")
#: The `lineage diff` shown: the example's price rise, as its quick start prints it.
DIFF_ARGS = ("diff", "-u", "example_shop", "--asset", "sales/price_list")
DIFF_ARGS += ("--key", "product_id", "--limit", "3")
#: Packages shown in the environment (the rest is abridged).
SHOWN_PACKAGES = ("pandas", "dagster")


def documents() -> dict[Path, str]:
    """README.md and every page under docs/, by path: the places a marked block may live."""
    paths = [README, *sorted(DOCS.rglob("*.md"))]
    return {path: path.read_text(encoding="utf-8") for path in paths}


def materialise_twice(workdir: Path) -> None:
    """The two runs: the asset module written, materialised, its filter edited, run again."""
    import dagster as dg

    from ubunye_dagster import UbunyeIOManager, UbunyeResource

    code = workdir / "shop"
    code.mkdir()
    for run, minimum in enumerate(MINIMUMS):
        (code / "assets.py").write_text(ASSETS.replace("MINIMUM", minimum), encoding="utf-8")
        spec = importlib.util.spec_from_file_location(f"shop_assets_{run}", code / "assets.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        manager = UbunyeIOManager(base_path="data", ubunye=UbunyeResource(usecase_dir="."))
        result = dg.materialize([module.raw, module.orders], resources={"io_manager": manager})
        assert result.success


def materialise_price_rise() -> None:
    """The example project's `sales/price_list` (a Delta table) materialised from the shipped
    products, then again with its price rise, as `python -m example_project` does."""
    import dagster as dg

    if str(ROOT) not in sys.path:  # the example project is a folder of the repository
        sys.path.insert(0, str(ROOT))
    from example_project.assets import raw, sales
    from example_project.definitions import USECASE
    from example_project.run import PRICE_RISE
    from ubunye_dagster import UbunyeIOManager, UbunyeResource

    ubunye = UbunyeResource(usecase_dir=".", usecase=USECASE)
    resources = {
        "io_manager": UbunyeIOManager(base_path="data", ubunye=ubunye),
        "delta_io_manager": UbunyeIOManager(base_path="data", ubunye=ubunye, format="delta"),
    }
    for rise in ({}, PRICE_RISE):
        config = {"ops": {"sales__price_list": {"config": rise}}}
        assets = [raw.raw_tables, sales.price_list]
        assert dg.materialize(assets, resources=resources, run_config=config).success


def flagged_tick(workdir: Path) -> tuple[str, str]:
    """Two runs of `sales/scored` (a random score over the same `sales/raw`), one drift sensor
    tick over them: what the tick shows (its skip reason) and the verdict `on_drift` receives,
    as the webhook notifier posts it. Paths are shown relative to ``workdir``."""
    import random

    import dagster as dg
    import pandas as pd

    from ubunye_dagster import DriftVerdict, UbunyeIOManager, UbunyeResource, build_drift_sensor

    @dg.asset(key_prefix="sales", group_name="sales")
    def raw():
        return pd.DataFrame({"id": [1, 2, 3], "amount": [12.5, 3.0, 40.0]})

    @dg.asset(key_prefix="sales", group_name="sales", ins={"raw": dg.AssetIn(["sales", "raw"])})
    def scored(raw):
        return raw.assign(score=[round(random.random(), 3) for _ in range(len(raw))])

    ubunye = UbunyeResource(usecase_dir=".", usecase="drift_example")
    resources = {"io_manager": UbunyeIOManager(base_path="data", ubunye=ubunye)}
    received: list[DriftVerdict] = []
    sensor = build_drift_sensor([raw, scored], on_drift=received.append)
    with dg.DagsterInstance.ephemeral() as instance:
        for _ in range(2):
            assert dg.materialize([raw, scored], resources=resources, instance=instance).success
        result = sensor.evaluate_tick(dg.build_sensor_context(instance=instance))
    [verdict] = received
    shown = f"{result.skip_message}\n", f"{verdict.model_dump_json(indent=2)}\n"
    prefix = f"{workdir.resolve()}/"
    return shown[0].replace(prefix, ""), shown[1].replace(prefix, "")


def warehouse_trace() -> str | None:
    """`lineage trace` of `big_orders`, read from and written to DuckDB through `with_receipts`
    (both tables hashed in DuckDB); None without dagster-duckdb-pandas, which `.ci/run`
    installs (it pins pandas<3, so `dev` leaves it out)."""
    if importlib.util.find_spec("dagster_duckdb_pandas") is None:
        return None
    import dagster as dg
    import pandas as pd
    from dagster_duckdb_pandas import DuckDBPandasIOManager

    from ubunye_dagster import UbunyeResource, with_receipts

    @dg.asset
    def orders():
        placed = pd.to_datetime(["2026-12-01 09:30", "2026-12-01 11:05", "2026-12-02 16:40"])
        return pd.DataFrame({"order_id": [1, 2, 3], "amount": [12.5, 3.0, 40.0], "placed": placed})

    @dg.asset
    def big_orders(orders):
        return orders[orders["amount"] > 10.0]

    inner = DuckDBPandasIOManager(database="warehouse.duckdb", schema="shop")
    manager = with_receipts(inner, ubunye=UbunyeResource(usecase_dir="."))
    assert dg.materialize([orders, big_orders], resources={"io_manager": manager}).success
    return trimmed_trace(cli_output("trace", "--asset", "big_orders"))


def cli_output(*args: str, allowed: tuple[int, ...] = (0,)) -> str:
    """What `ubunye-dagster lineage ...` prints, run in this process (`allowed`: the exit
    statuses that are not a failure)."""
    from ubunye_core.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["lineage", *args, "-d", "."])
    if code not in allowed:
        raise SystemExit(f"ubunye-dagster lineage {' '.join(args)} failed ({code})")
    return out.getvalue()


def abridged_record(text: str) -> str:
    """The newest record of sales/orders, abridged: a few step keys and packages."""
    record = json.loads(text)
    for side in ("inputs", "outputs"):
        record[side] = [
            {**{key: step[key] for key in STEP_KEYS}, "…": "…"} for step in record[side]
        ]
    packages = record["environment"]["packages"]
    record["environment"]["packages"] = {
        **{name: packages[name] for name in SHOWN_PACKAGES if name in packages},
        "…": "…",
    }
    record["variables"] = {"…": "…"}
    return compact_json(record)


def compact_json(record: dict) -> str:
    """A record as JSON with one top-level key a line, and each step, timing or expectation on
    one line of its own (the file itself is indented throughout)."""

    def one_line(value: object) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))

    lines = []
    for key, value in record.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            items = ",\n".join(f"    {one_line(item)}" for item in value)
            lines.append(f"  {json.dumps(key)}: [\n{items}\n  ]")
        else:
            lines.append(f"  {json.dumps(key)}: {one_line(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def trimmed_trace(text: str) -> str:
    """The trace with the package lines of CODE AND ENVIRONMENT, but the shown ones, each run of
    them replaced by one "…" line."""
    lines, section, skipping = [], "", False
    for line in text.splitlines():
        if not line.startswith("│ "):
            section = line.strip(" │├└─")
        name = line.split(":", 1)[0].strip(" │├└─")
        shown = name in ("code", "python", "environment", *SHOWN_PACKAGES)
        if section == "CODE AND ENVIRONMENT" and line.startswith("│ ") and not shown:
            if not skipping:
                lines.append("│   ├── …")
            skipping = True
            continue
        skipping = False
        lines.append(line.rstrip())
    return "\n".join(lines) + "\n"


def fresh_blocks() -> dict[str, str]:
    """Every README example, from a real run in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="ubunye-readme-") as folder:
        workdir = Path(folder)
        previous = Path.cwd()
        os.chdir(workdir)
        try:
            materialise_twice(workdir)
            blocks = {
                "record": abridged_record(cli_output("show", "--asset", "sales/orders", "--json")),
                "trace": trimmed_trace(cli_output("trace", "--asset", "sales/orders")),
                "compare": cli_output("compare", "--asset", "sales/orders"),
            }
            materialise_price_rise()
            # Exit status 1: the two versions differ, as they should.
            diffed = cli_output(*DIFF_ARGS, allowed=(1,))
            shown = " ".join(("diff", "-d", ".", *DIFF_ARGS[1:]))
            blocks["diff"] = f"$ ubunye-dagster lineage {shown}\n{diffed}"
            blocks["drift-tick"], blocks["drift-verdict"] = flagged_tick(workdir)
            warehouse = warehouse_trace()
            if warehouse is not None:
                blocks["warehouse-trace"] = warehouse
        finally:
            os.chdir(previous)
        real = str(workdir.resolve())
        return {name: text.replace(real, "").replace(folder, "") for name, text in blocks.items()}


def readme_blocks(text: str, marker: re.Pattern[str] = MARKER) -> dict[str, str]:
    """A document's example blocks by marker name (the text inside the fence); ``marker`` finds
    them (``readme-example`` by default)."""
    return {
        match["name"]: match.group(0).split("\n", 2)[2].rsplit("```", 1)[0]
        for match in marker.finditer(text)
    }


def shown_blocks(texts: dict[Path, str]) -> dict[str, tuple[Path, str]]:
    """Every document's example blocks by marker name, with the document each is in."""
    return {
        name: (path, block)
        for path, text in texts.items()
        for name, block in readme_blocks(text).items()
    }


def rewritten(
    text: str, blocks: dict[str, str], marker: re.Pattern[str] = MARKER, tag: str = "readme-example"
) -> str:
    """A document with each of its blocks marked ``<!-- TAG: name -->`` (found by ``marker``)
    replaced by its fresh text (kept as it is when there is none: its run needs what is not
    installed)."""

    def replace(match: re.Match[str]) -> str:
        if match["name"] not in blocks:
            return match.group(0)
        body = blocks[match["name"]]
        return f"<!-- {tag}: {match['name']} -->\n```{match['lang']}\n{body}```\n"

    return marker.sub(replace, text)


#: Durations in seconds (`0.056s`, `"seconds": 0.009422`).
_DURATION = re.compile(r"\b\d+\.\d+(?=s\b|[\s,)}\]]|$)", re.M)
_VOLATILE = [
    (re.compile(r"sha256:[0-9a-f]{6,64}…?"), "sha256:<digest>"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}…?"), "<run id>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?"), "<time>"),
    (re.compile(r'("(?:python|pandas|dagster)": ")[^"]+'), r"\1<version>"),
    (re.compile(r"(: )\d+\.\d+\.\d+\S*"), r"\1<version>"),
    # Event-log positions follow how many events each Dagster version stores per run.
    (re.compile(r'("(?:previous_)?storage_id": )\d+'), r"\1<storage id>"),
    (_DURATION, "<seconds>"),
    (re.compile(r"[ ━─═]+"), " "),
]


#: Blocks that show no durations: their decimal numbers are data, compared as they are.
NO_DURATIONS = {"diff"}


def normalised(text: str, name: str = "") -> str:
    """``text`` with what changes between runs and machines replaced by placeholders (and runs of
    spaces and rules collapsed, as table widths follow them); block ``name`` in `NO_DURATIONS`
    keeps its decimal numbers."""
    for pattern, replacement in _VOLATILE:
        if not (name in NO_DURATIONS and pattern is _DURATION):
            text = pattern.sub(replacement, text)
    return text


def disagreements(texts: dict[Path, str], fresh: dict[str, str]) -> list[str]:
    """Unified diffs of each documented block that a fresh run does not reproduce
    (normalised), and a line for each fresh block no document shows."""
    shown = shown_blocks(texts)
    problems = [f"no document has a block marked {name!r}\n" for name in fresh if name not in shown]
    for name, text in fresh.items():
        if name in shown and normalised(shown[name][1], name) != normalised(text, name):
            diff = difflib.unified_diff(
                normalised(shown[name][1], name).splitlines(),
                normalised(text, name).splitlines(),
                f"{shown[name][0].relative_to(ROOT)} {name}",
                f"fresh {name}",
                lineterm="",
            )
            problems.append("\n".join(diff) + "\n")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, do not rewrite")
    args = parser.parse_args(argv)
    texts = documents()
    fresh = fresh_blocks()
    if args.check:
        problems = disagreements(texts, fresh)
        sys.stdout.write("".join(problems) or "documented examples agree with a fresh run\n")
        return 1 if problems else 0
    for path, text in texts.items():
        if readme_blocks(text):
            path.write_text(rewritten(text, fresh), encoding="utf-8")
            print(f"rewrote {', '.join(readme_blocks(text))} in {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
