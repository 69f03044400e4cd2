"""The example's price rise leaves two Delta versions of `sales/price_list`, and the quick start's
`lineage diff` names exactly the products whose price rose."""

from __future__ import annotations

import json

import dagster as dg
import pandas as pd
import pytest

from example_project.definitions import MAIN_JOB, build_definitions
from example_project.paths import SEED_DIR
from example_project.run import DAYS, PRICE_RISE, diff_command, raise_prices
from ubunye_core.cli import main

pytest.importorskip("deltalake")


def test_the_example_price_rise_is_shown_by_lineage_diff(tmp_path, capsys):
    defs = build_definitions(tmp_path)
    job = defs.resolve_job_def(MAIN_JOB)
    raw = [dg.AssetKey(["raw", name]) for name in ("customers", "orders", "products")]
    selection = [*raw, dg.AssetKey(["sales", "price_list"])]
    with dg.DagsterInstance.ephemeral() as instance:
        job.execute_in_process(instance=instance, partition_key=DAYS[0], asset_selection=selection)
        assert raise_prices(tmp_path, instance).success
    capsys.readouterr()
    assert main([*diff_command(tmp_path), "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    products = pd.read_csv(SEED_DIR / "products.csv")
    rising = products[products["category"] == PRICE_RISE["rise_category"]]
    assert document["changed"] == len(rising) and document["removed"] == document["added"] == 0
    assert document["before"]["location"].endswith("price_list.delta@v0")
    assert document["after"]["location"].endswith("price_list.delta@v1")
