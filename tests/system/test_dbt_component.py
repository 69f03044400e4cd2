"""A components project (``create-dagster project``) adopting dbt receipts in its ``defs.yaml``:
``UbunyeDbtProjectComponent`` in place of ``DbtProjectComponent``, beside ``UbunyeReceipts``."""

from __future__ import annotations

import json

import dagster as dg
import pytest
from components_project import (
    COMPONENT_TYPE,
    NEEDS_COMPONENTS_DAGSTER,
    PROJECT,
    fresh_project_modules,
    run_tool,
    tool,
)
from dbt_shop import DbtShop, copy_shop
from test_component import load_defs_folder

from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.automation.adopt import CONTENT_SENSOR
from ubunye_dagster.automation.conditions import LABEL

pytestmark = NEEDS_COMPONENTS_DAGSTER

DBT_COMPONENT_TYPE = "ubunye_dagster.dbt.UbunyeDbtProjectComponent"


@pytest.fixture(scope="module")
def components_project(tmp_path_factory):
    """A components project whose dbt component builds the example's dbt project."""
    root = tmp_path_factory.mktemp("components")
    with pytest.MonkeyPatch.context() as monkeypatch:
        shop = copy_shop(root, monkeypatch)
        made = run_tool(root, tool("create-dagster"), "project", PROJECT, "--no-uv-sync", cwd=root)
        assert made.returncode == 0, made.stdout + made.stderr
        project = root / PROJECT
        defs = project / "src" / PROJECT / "defs"
        for folder, text in {
            "receipts": f"type: {COMPONENT_TYPE}\nattributes:\n  usecase_dir: {root}\n",
            "dbt_shop": (
                f"type: {DBT_COMPONENT_TYPE}\nattributes:\n  project:\n"
                f"    project_dir: {shop.project_dir}\n    profiles_dir: {shop.project_dir}\n"
                f"  usecase_dir: {root}\n"
                "  translation:\n"
                '    automation_condition: "{{ on_content_change() }}"\n'
            ),
        }.items():
            (defs / folder).mkdir(parents=True)
            (defs / folder / "defs.yaml").write_text(text, encoding="utf-8")
        shop.dbt().cli(["parse"], target_path=shop.project_dir / "target").wait()
        yield root, project, shop


def test_dg_lists_the_dbt_component_type(components_project):
    root, _, _ = components_project
    listed = run_tool(root, tool("dg"), "list", "components", "--json")
    assert listed.returncode == 0, listed.stderr
    answer = json.loads(listed.stdout)
    entries = answer["items"] if isinstance(answer, dict) else answer
    assert "ubunye_dagster.components.UbunyeDbtProjectComponent" in [e["key"] for e in entries]


def test_a_components_project_gives_each_dbt_model_its_receipt(components_project, monkeypatch):
    root, project, shop = components_project
    monkeypatch.syspath_prepend(str(project / "src"))
    with fresh_project_modules():  # not another module's project of the same package name
        defs = load_defs_folder(project)
        assets = [a for a in defs.assets if isinstance(a, dg.AssetsDefinition)]
        result = dg.materialize(assets, resources=defs.resources)

    assert result.success
    for asset in ("raw_orders", "stg_orders", "customer_revenue"):
        record = DbtShop(root).record(asset, result.run_id)
        assert record.outputs[-1].data_hash == shop.digest_read_through_duckdb(asset)
    [stg] = DbtShop(root).record("stg_orders", result.run_id).inputs
    assert stg.name == "raw_orders"


def test_dbt_assets_put_on_on_content_change_come_with_their_automation_sensor(
    components_project, monkeypatch
):
    _, project, _ = components_project
    monkeypatch.syspath_prepend(str(project / "src"))
    with fresh_project_modules():
        defs = load_defs_folder(project)
    graph = defs.resolve_asset_graph()
    dbt_keys = {
        key
        for key in graph.materializable_asset_keys
        if key.path[-1] in ("raw_orders", "stg_orders", "customer_revenue")
    }
    sensor = defs.resolve_sensor_def(CONTENT_SENSOR)

    assert {graph.get(key).automation_condition.get_label() for key in dbt_keys} == {LABEL}
    assert dbt_keys <= set(sensor.asset_selection.resolve(graph))
    assert internals.evaluated_in_user_code(sensor) is True
