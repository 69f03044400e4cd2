"""dbt models, seeds and sources get receipts hashed in the warehouse: real dbt (dbt-duckdb) on a
DuckDB file in the test's folder, through ``@dbt_assets`` adopted in one line; nothing mocked."""

from __future__ import annotations

import hashlib
import subprocess
from functools import cached_property

import dagster as dg
import duckdb
import pytest
from dbt_shop import EXAMPLE, MODELS, assert_environment_names, copy_shop
from reference_cli import reference_cli

from ubunye_dagster.dbt.receipts import SAME_RUN_NOTE
from ubunye_dagster.receipts import metadata as keys
from ubunye_dagster.receipts.identity import identity_for_asset

#: A source: a table another process loads, which dbt reads and never builds.
SOURCES = """\
version: 2
sources:
  - name: billing
    schema: main
    tables:
      - name: payments
"""
PAYMENTS_MODEL = """\
select customer_id, sum(paid) as paid from {{ source('billing', 'payments') }} group by customer_id
"""
#: A column rows-v1 has no type name for (an interval): its receipt cannot be computed.
UNHASHABLE_MODEL = "select order_id, interval 3 day as grace from {{ ref('stg_orders') }}\n"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The shop with a source and an unhashable model, built once by ``dbt build``."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        shop = copy_shop(tmp_path_factory.mktemp("dbt"), monkeypatch)
        with duckdb.connect(str(shop.database)) as connection:
            connection.execute("create table main.payments as select 1 as customer_id, 7.5 as paid")
        shop.write("models/sources.yml", SOURCES)
        shop.write("models/payments_by_customer.sql", PAYMENTS_MODEL)
        shop.write("models/order_grace.sql", UNHASHABLE_MODEL)
        with dg.DagsterInstance.ephemeral() as instance:
            result = shop.materialise(instance)
            yield shop, result


def materialisation(result: dg.ExecuteInProcessResult, asset: str) -> dg.AssetMaterialization:
    [event] = [
        e.materialization
        for e in result.get_asset_materialization_events()
        if e.asset_key == dg.AssetKey(asset)
    ]
    return event


@pytest.mark.smoke
def test_each_dbt_model_gets_a_receipt_hashed_in_the_warehouse(built):
    shop, result = built
    for asset in (*MODELS, "payments_by_customer"):
        output = shop.record(asset, result.run_id).outputs[-1]
        assert output.data_hash == shop.digest_read_through_duckdb(asset), asset
        assert output.hash_method == "rows-v1" and output.hash_error is None
        assert output.location == f'"shop"."main"."{asset}"'
        assert output.format == "duckdb"


@pytest.mark.smoke
def test_the_record_is_filed_as_every_other_assets_is(built):
    shop, result = built
    identity = identity_for_asset(
        usecase="dagster", asset_key=["stg_orders"], group_name=None, dagster_run_id=result.run_id
    )
    path = shop.root / ".ubunye" / "lineage" / identity.task_path / f"{identity.run_id}.json"
    assert path.is_file()
    shown = materialisation(result, "stg_orders").metadata[keys.RECORD_PATH].value
    assert shown == str(path)


@pytest.mark.smoke
def test_the_materialisation_carries_the_receipt_and_its_digest_as_data_version(built):
    shop, result = built
    event = materialisation(result, "customer_revenue")
    digest = shop.digest_read_through_duckdb("customer_revenue")
    assert event.metadata[keys.DATA_HASH].value == digest
    assert event.metadata[keys.ROW_COUNT].value == 4
    assert event.tags["dagster/data_version"] == digest


@pytest.mark.smoke
def test_the_code_hash_is_the_compiled_sql_hash(built):
    shop, result = built
    [compiled] = (shop.project_dir / "target").glob("*/compiled/dbt_shop/models/stg_orders.sql")
    expected = "sha256:" + hashlib.sha256(compiled.read_bytes()).hexdigest()
    assert shop.record("stg_orders", result.run_id).code_hash == expected


@pytest.mark.smoke
def test_a_seeds_code_hash_is_its_files_hash_as_dbt_checksums_it(built):
    shop, result = built
    seed = (EXAMPLE / "seeds" / "raw_orders.csv").read_bytes().strip()
    expected = "sha256:" + hashlib.sha256(seed).hexdigest()
    assert shop.record("raw_orders", result.run_id).code_hash == expected


@pytest.mark.smoke
def test_the_inputs_are_the_upstream_models_receipts_of_the_same_run(built):
    shop, result = built
    record = shop.record("customer_revenue", result.run_id)
    inputs = {step.name: step for step in record.inputs}
    assert sorted(inputs) == ["raw_customers", "stg_orders"]
    for name, step in inputs.items():
        assert step.data_hash == shop.record(name, result.run_id).outputs[-1].data_hash
        assert step.source_note == SAME_RUN_NOTE


@pytest.mark.smoke
def test_a_source_is_an_input_hashed_in_the_warehouse(built):
    shop, result = built
    [payments] = shop.record("payments_by_customer", result.run_id).inputs
    assert payments.name == "billing/payments"
    assert payments.data_hash == shop.digest_read_through_duckdb("payments")
    assert payments.row_count == 1 and payments.source_note is None


@pytest.mark.smoke
def test_the_environment_names_dbt_core_and_the_adapter(built):
    shop, result = built
    assert_environment_names(shop.record("stg_orders", result.run_id), "duckdb", "duckdb")


@pytest.mark.smoke
def test_a_receipt_never_fails_a_dbt_build(built):
    shop, result = built
    assert result.success
    output = shop.record("order_grace", result.run_id).outputs[-1]
    assert output.data_hash is None and output.row_count is None
    assert output.hash_error.startswith("UnsupportedTypeError: ")
    assert "interval" in output.hash_error.lower()
    event = materialisation(result, "order_grace")
    assert keys.DATA_HASH not in event.metadata
    assert event.metadata[keys.HASH_ERROR].value == output.hash_error
    # Dagster's own logical version stands in; ours is always a rows-v1 digest.
    assert not event.tags["dagster/data_version"].startswith("sha256:")


@pytest.mark.smoke
def test_dbt_tests_stay_dbts_asset_checks(built):
    _, result = built
    checks = {
        (e.asset_key.to_user_string(), e.check_name): e.passed
        for e in result.get_asset_check_evaluations()
    }
    assert checks[("stg_orders", "not_null_stg_orders_order_id")] is True
    assert checks[("customer_revenue", "unique_customer_revenue_customer_id")] is True
    assert not [name for _, name in checks if name.startswith("ubunye")]


@pytest.mark.smoke
def test_the_reference_cli_reads_the_record_of_a_dbt_model(built):
    shop, result = built
    arguments = ["-d", str(shop.root), "-u", "dagster", "-p", "default", "-t", "customer_revenue"]
    traced = subprocess.run(
        [reference_cli(), "lineage", "trace", *arguments, "--run-id", result.run_id],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert traced.returncode == 0, traced.stdout + traced.stderr
    digest = shop.record("customer_revenue", result.run_id).outputs[-1].data_hash
    assert digest[len("sha256:") :][:12] in traced.stdout


#: A model whose SQL the warehouse refuses: dbt fails it, and builds the rest.
BROKEN_MODEL = "select no_such_column from {{ ref('raw_orders') }}\n"


def test_a_failed_model_fails_the_build_and_what_was_built_keeps_its_receipt(tmp_path, monkeypatch):
    shop = copy_shop(tmp_path, monkeypatch)
    shop.write("models/broken.sql", BROKEN_MODEL)
    result = shop.materialise(raise_on_error=False)

    assert not result.success
    built = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert "broken" not in built and "raw_orders" in built
    output = shop.record("raw_orders", result.run_id).outputs[-1]
    assert output.data_hash == shop.digest_read_through_duckdb("raw_orders")


@pytest.mark.smoke
def test_the_harness_dbt_resource_still_replaces_the_version_dagster_dbt_asks_dbt_for():
    # The harness (tests/dbt_shop.py) reads dbt-core's version from the package; should
    # dagster-dbt stop asking through `_cli_version`, each build would again run `dbt --version`.
    import dagster_dbt
    from dbt_shop import InstalledDbtCli
    from packaging.version import Version

    if Version(dagster_dbt.__version__) < Version("0.27"):
        pytest.skip(f"dagster-dbt {dagster_dbt.__version__} does not run `dbt --version`")
    assert isinstance(vars(dagster_dbt.DbtCliResource).get("_cli_version"), cached_property)
    resource = InstalledDbtCli(project_dir=str(EXAMPLE), profiles_dir=str(EXAMPLE))
    assert resource._cli_version.major == 1
