"""The receipts component observes sources by their rows: ``observe:`` in its ``defs.yaml`` names
each source and where its rows are, as ``with_ubunye(observe=...)`` does, and the component
defines the observed sources (with the cron condition that has the daemon observe them)."""

from __future__ import annotations

import dagster as dg
import pandas as pd
import pytest
from components_project import (
    COMPONENT_TYPE,
    NEEDS_COMPONENTS_DAGSTER,
    PROJECT,
    SALES,
    fresh_project_modules,
)
from test_component import error_chain, load_defs_folder

from ubunye_dagster.automation.observe import OBSERVED_AT

pytestmark = [pytest.mark.timeout(900), NEEDS_COMPONENTS_DAGSTER]

ORDERS_KEY = dg.AssetKey(["raw", "orders"])


PYPROJECT = f"""\
[project]
name = "{PROJECT}"
version = "0.1.0"

[tool.dg]
directory_type = "project"

[tool.dg.project]
root_module = "{PROJECT}"
"""


def loaded_with(tmp_path, monkeypatch, observe: str) -> dg.Definitions:
    """The definitions of a components project laid out as ``create-dagster project`` lays it
    out (its assets in ``defs/sales.py``), its receipts ``defs.yaml`` observing ``observe``."""
    project = tmp_path / PROJECT
    defs = project / "src" / PROJECT / "defs"
    (defs / "receipts").mkdir(parents=True)
    (project / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (defs.parent / "__init__.py").write_text("", encoding="utf-8")
    (defs / "__init__.py").write_text("", encoding="utf-8")
    (defs / "sales.py").write_text(SALES, encoding="utf-8")
    (defs / "receipts" / "defs.yaml").write_text(
        f"type: {COMPONENT_TYPE}\n\nattributes:\n  observe:\n{observe}", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(project / "src"))
    monkeypatch.chdir(tmp_path)
    with fresh_project_modules():
        return load_defs_folder(project)


def test_a_source_named_in_observe_is_observable_with_its_cron_condition(tmp_path, monkeypatch):
    path = tmp_path / "orders.parquet"
    pd.DataFrame({"order_id": [1, 2]}).to_parquet(path)
    observe = f"    raw/orders:\n      path: {path}\n      cron: '0 * * * *'\n"

    graph = loaded_with(tmp_path, monkeypatch, observe).resolve_asset_graph()
    source = graph.get(ORDERS_KEY)

    assert source.is_observable and not source.is_materializable
    assert source.metadata[OBSERVED_AT] == str(path)
    assert source.automation_condition == (
        dg.AutomationCondition.cron_tick_passed("0 * * * *").since_last_handled()
    )


def test_observing_an_asset_another_component_defines_is_refused_naming_it(tmp_path, monkeypatch):
    path = tmp_path / "orders.parquet"
    pd.DataFrame({"order_id": [1, 2]}).to_parquet(path)

    with pytest.raises(Exception) as refused:
        loaded_with(tmp_path, monkeypatch, f"    orders:\n      path: {path}\n")
    assert "observe names orders, which another component defines" in error_chain(refused.value)
