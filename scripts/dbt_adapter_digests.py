"""Regenerate the table docs/dbt.md shows of the example dbt project built unchanged on DuckDB,
PostgreSQL and Spark (each seed's and model's rows-v1 digest on each, and whether they agree),
from a real run, or check that it still agrees with one.

The project (example_project/dbt_shop) is built once per profile target, with receipts: `dev` on
a DuckDB file, `postgres` on a temporary PostgreSQL cluster, `spark` through a Thrift server
inside a local SparkSession (tests/postgres_cluster.py, tests/local_spark.py). The block follows
the marker line `<!-- dbt-adapters-output: digests -->` and is replaced whole.

    python scripts/dbt_adapter_digests.py            # rewrite the block
    python scripts/dbt_adapter_digests.py --check    # exit 1 when a fresh run disagrees

Digests are compared normalised, as `readme_examples.normalised` does; whether they agree is not.
"""

from __future__ import annotations

import importlib
import re
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "dbt.md"
TAG = "dbt-adapters-output"
MARKER = re.compile(
    rf"^<!-- {TAG}: (?P<name>[a-z-]+) -->\n```(?P<lang>\w*)\n.*?^```\n", re.M | re.S
)

# docs/dbt.md's other blocks' script (how a page's blocks are compared and rewritten), and the
# tests' dbt project, PostgreSQL cluster and Spark.
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "tests")]
dbt_examples = importlib.import_module("dbt_examples")


def disagreements(text: str, fresh: dict[str, str]) -> list[str]:
    """A unified diff per block of this script the fresh run does not reproduce (normalised),
    and a line for each block the page lacks."""
    return dbt_examples.disagreements(text, fresh, MARKER)


def digests_block(outputs: Mapping[str, Mapping[str, Any]]) -> str:
    """The table: each node's ``data_hash`` (abridged) on each adapter of ``outputs``
    (``{adapter: {node: output step}}``), and whether data and schema digests agree on all."""
    from dbt_shop import MODELS

    adapters = list(outputs)
    rows = [["node", *adapters, "same rows-v1 on all"]]
    for node in MODELS:
        steps = [outputs[adapter][node] for adapter in adapters]
        digests = {(step.data_hash, step.schema_hash) for step in steps}
        shown = [f"{step.data_hash[:19]}…" if step.data_hash else "-" for step in steps]
        rows.append([node, *shown, "yes" if len(digests) == 1 else "no"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = (
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
    return "\n".join(lines) + "\n"


def built_outputs(shop: Any) -> dict[str, Any]:
    """``{node: output step}`` of one ``dbt build`` of ``shop`` with receipts."""
    import dagster as dg

    with dg.DagsterInstance.ephemeral() as instance:
        run = shop.materialise(instance)
    return shop.outputs(run.run_id)


def fresh_blocks() -> dict[str, str]:
    """The block, from one build of the project on each adapter in a temporary folder."""
    import pytest
    from dbt_shop import copy_shop, copy_shop_on_postgres, copy_shop_on_spark
    from local_spark import build_local_spark_session, spark_thrift_server
    from postgres_cluster import postgres_cluster

    outputs: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="ubunye-dbt-adapters-") as folder:
        root = Path(folder)
        with pytest.MonkeyPatch.context() as monkeypatch:
            outputs["duckdb"] = built_outputs(copy_shop(root / "duckdb", monkeypatch))
        with pytest.MonkeyPatch.context() as monkeypatch, postgres_cluster("admin") as cluster:
            shop = copy_shop_on_postgres(root / "postgres", monkeypatch, cluster, "shop")
            outputs["postgres"] = built_outputs(shop)
        warehouse = {"spark.sql.warehouse.dir": (root / "spark-warehouse").as_uri()}
        spark = build_local_spark_session("ubunye-dbt-adapters", warehouse)
        try:
            with (
                spark_thrift_server(spark, "main", root / "spark" / "main.db") as port,
                pytest.MonkeyPatch.context() as monkeypatch,
            ):
                shop = copy_shop_on_spark(root / "spark", monkeypatch, port)
                outputs["spark"] = built_outputs(shop)
        finally:
            spark.stop()
    return {"digests": digests_block(outputs)}


if __name__ == "__main__":
    sys.exit(
        dbt_examples.check_or_rewrite(None, __doc__.split("\n\n")[0], fresh_blocks, MARKER, TAG)
    )
