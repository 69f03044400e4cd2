"""Sources observed by their rows: an external asset's observation hashes its rows where they
are (a Parquet file or folder, on disk or S3; a DuckDB or PostgreSQL table), reports the rows-v1
digest as the data version with the receipt as metadata, and leaves an ``observation`` record
the CLIs (ours and the reference's) list, trace and search. A source that cannot be read is
observed with its hash error and no data version; bad input is refused naming the asset."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import dagster as dg
import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from reference_cli import reference_cli

from ubunye_dagster import UbunyeIOManager, UbunyeResource, Warehouse, with_ubunye
from ubunye_dagster.automation import (
    MissingSourceError,
    ParquetSource,
    TableSource,
    observed_source,
)
from ubunye_dagster.automation.conditions import on_content_change
from ubunye_rows import fingerprint

ORDERS = pd.DataFrame({"order_id": [1, 2, 3], "region": ["north", "south", "north"]})
ORDERS_KEY = dg.AssetKey(["raw", "orders"])


@pytest.fixture
def instance():
    with dg.instance_for_test() as temporary:
        yield temporary


def observe(defs: dg.Definitions, instance: dg.DagsterInstance, *keys: dg.AssetKey) -> None:
    """Run one observation of ``keys`` through a job of the Definitions, as the UI's Observe."""
    job = dg.define_asset_job("observe_sources", selection=list(keys))
    runnable = dg.Definitions.merge(defs, dg.Definitions(jobs=[job]))
    result = runnable.resolve_job_def("observe_sources").execute_in_process(instance=instance)
    assert result.success


def latest_observation(instance: dg.DagsterInstance, key: dg.AssetKey) -> dg.AssetObservation:
    [record] = instance.fetch_observations(key, limit=1).records
    return record.asset_observation


def observed(tmp_path: Path, source: ParquetSource | TableSource | dict) -> dg.Definitions:
    """Definitions holding the orders source observed from ``source``, records under tmp_path."""
    return with_ubunye(
        dg.Definitions(assets=[dg.AssetSpec(ORDERS_KEY, group_name="sales")]),
        observe={"raw/orders": source},
        usecase_dir=str(tmp_path),
        base_path=str(tmp_path / "data"),
    )


@pytest.mark.smoke
def test_an_observation_reports_the_digest_of_the_files_rows_as_its_data_version(
    tmp_path, instance
):
    ORDERS.to_parquet(tmp_path / "orders.parquet")
    observe(observed(tmp_path, {"path": str(tmp_path / "orders.parquet")}), instance, ORDERS_KEY)

    seen = latest_observation(instance, ORDERS_KEY)
    digest = fingerprint(ORDERS).data_hash
    assert seen.data_version == digest
    assert seen.metadata["ubunye/data_hash"].value == digest
    assert seen.metadata["dagster/row_count"].value == 3
    assert Path(seen.metadata["ubunye/record_path"].value).is_file()


def test_a_folder_of_part_files_is_observed_as_one_table(tmp_path, instance):
    folder = tmp_path / "orders"
    folder.mkdir()
    ORDERS.iloc[:2].to_parquet(folder / "part-0.parquet", index=False)
    ORDERS.iloc[2:].to_parquet(folder / "part-1.parquet", index=False)
    observe(observed(tmp_path, ParquetSource(path=str(folder))), instance, ORDERS_KEY)

    assert latest_observation(instance, ORDERS_KEY).data_version == fingerprint(ORDERS).data_hash


def test_a_file_rewritten_with_the_same_rows_in_another_order_keeps_its_data_version(
    tmp_path, instance
):
    path = tmp_path / "orders.parquet"
    ORDERS.to_parquet(path, index=False)
    defs = observed(tmp_path, ParquetSource(path=str(path)))
    observe(defs, instance, ORDERS_KEY)
    first = latest_observation(instance, ORDERS_KEY).data_version
    pq.write_table(
        pa.Table.from_pandas(ORDERS.iloc[::-1], preserve_index=False), path, row_group_size=1
    )
    observe(defs, instance, ORDERS_KEY)

    assert latest_observation(instance, ORDERS_KEY).data_version == first


def test_a_source_that_cannot_be_read_is_observed_with_its_hash_error_and_no_data_version(
    tmp_path, instance
):
    path = tmp_path / "orders.parquet"
    ORDERS.to_parquet(path)
    defs = observed(tmp_path, ParquetSource(path=str(path)))
    observe(defs, instance, ORDERS_KEY)
    path.unlink()
    observe(defs, instance, ORDERS_KEY)

    seen = latest_observation(instance, ORDERS_KEY)
    assert seen.data_version is None
    assert "ubunye/data_hash" not in seen.metadata
    assert seen.metadata["ubunye/hash_error"].value.startswith("FileNotFoundError: ")
    record = json.loads(Path(seen.metadata["ubunye/record_path"].value).read_text())
    assert record["status"] == "error"
    assert record["outputs"][0]["hash_error"] == seen.metadata["ubunye/hash_error"].value


def test_a_parquet_file_on_s3_is_observed_where_it_is(tmp_path, instance):
    from object_store import moto_s3

    s3fs = pytest.importorskip("s3fs")
    with moto_s3() as store:
        url = f"s3://{store['bucket']}/raw/orders.parquet"
        options = store["storage_options"]
        with s3fs.S3FileSystem(**options).open(url, "wb") as handle:
            ORDERS.to_parquet(handle)
        observe(observed(tmp_path, {"path": url, "storage_options": options}), instance, ORDERS_KEY)

    seen = latest_observation(instance, ORDERS_KEY)
    assert seen.data_version == fingerprint(ORDERS).data_hash
    assert seen.metadata["dagster/uri"].value == url


@pytest.mark.smoke
def test_a_duckdb_table_is_observed_in_the_database(tmp_path, instance):
    database = tmp_path / "shop.duckdb"
    with duckdb.connect(str(database)) as connection:
        connection.execute("CREATE TABLE orders AS SELECT * FROM ORDERS")
    source = TableSource(
        table="main.orders", warehouse=Warehouse(kind="duckdb", connection=str(database))
    )
    observe(observed(tmp_path, source), instance, ORDERS_KEY)

    seen = latest_observation(instance, ORDERS_KEY)
    assert (
        seen.data_version
        == fingerprint(pa.Table.from_pandas(ORDERS, preserve_index=False)).data_hash
    )
    assert seen.metadata["dagster/uri"].value == "duckdb:main.orders"


def test_a_missing_table_is_observed_with_its_hash_error(tmp_path, instance):
    database = tmp_path / "shop.duckdb"
    duckdb.connect(str(database)).close()
    source = {"table": "main.orders", "warehouse": {"kind": "duckdb", "connection": str(database)}}
    observe(observed(tmp_path, source), instance, ORDERS_KEY)

    seen = latest_observation(instance, ORDERS_KEY)
    assert seen.data_version is None
    assert "orders" in seen.metadata["ubunye/hash_error"].value


def test_a_postgres_table_is_observed_in_the_database(tmp_path, instance):
    psycopg2 = pytest.importorskip("psycopg2")
    from postgres_cluster import postgres_available, postgres_cluster

    if not postgres_available():
        pytest.skip("no PostgreSQL server binaries (Debian `postgresql`)")
    with postgres_cluster() as cluster:
        connection = psycopg2.connect(cluster.url)
        with connection, connection.cursor() as cursor:
            cursor.execute("CREATE TABLE orders (order_id bigint, region text)")
            cursor.execute("INSERT INTO orders VALUES (1, 'north'), (2, 'south'), (3, 'north')")
        connection.close()
        source = TableSource(
            table="public.orders", warehouse=Warehouse(kind="postgres", connection=cluster.url)
        )
        observe(observed(tmp_path, source), instance, ORDERS_KEY)

    seen = latest_observation(instance, ORDERS_KEY)
    assert (
        seen.data_version
        == fingerprint(pa.Table.from_pandas(ORDERS, preserve_index=False)).data_hash
    )
    shown = json.dumps({key: str(entry.value) for key, entry in seen.metadata.items()})
    assert seen.metadata["dagster/uri"].value == "postgres:public.orders"
    assert cluster.url not in shown  # the connection string (its password) is never shown


@pytest.mark.smoke
def test_each_observation_leaves_a_record_the_clis_list_trace_and_search(tmp_path, instance):
    ORDERS.to_parquet(tmp_path / "orders.parquet")
    observe(observed(tmp_path, {"path": str(tmp_path / "orders.parquet")}), instance, ORDERS_KEY)
    digest = fingerprint(ORDERS).data_hash
    ours = [sys.executable, "-m", "ubunye_core.cli", "lineage"]
    where = ["--usecase-dir", str(tmp_path), "--asset", "raw/orders", "--json"]

    listed = json.loads(
        subprocess.run([*ours, "list", *where], check=True, capture_output=True).stdout
    )
    traced = json.loads(
        subprocess.run([*ours, "trace", *where], check=True, capture_output=True).stdout
    )
    found = subprocess.run(
        [*ours, "search", "--usecase-dir", str(tmp_path), "--json"], check=True, capture_output=True
    )
    reference = subprocess.run(
        [reference_cli(), "lineage", "trace", "-d", str(tmp_path), "-u", "dagster", "-p", "sales",
         "-t", "raw.orders", "--json"],
        check=True, capture_output=True,
    )  # fmt: skip

    assert [entry["model"] for entry in listed] == ["observation"]
    assert traced["outputs"][0]["data_hash"] == digest
    assert [entry["task_path"] for entry in json.loads(found.stdout)] == [
        "dagster/sales/raw.orders"
    ]
    assert json.loads(reference.stdout)["outputs"][0]["data_hash"] == digest


def test_a_local_path_that_does_not_exist_is_refused_when_the_definitions_load(tmp_path):
    with pytest.raises(MissingSourceError, match=r"observed source raw/orders: no Parquet file"):
        observed(tmp_path, {"path": str(tmp_path / "nowhere.parquet")})


def test_a_duckdb_file_that_does_not_exist_is_refused_when_the_definitions_load(tmp_path):
    source = {
        "table": "main.orders",
        "warehouse": {"kind": "duckdb", "connection": str(tmp_path / "no.duckdb")},
    }
    with pytest.raises(MissingSourceError, match=r"observed source raw/orders: no DuckDB database"):
        observed(tmp_path, source)


def test_source_settings_naming_no_path_or_table_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"name a 'path' \(Parquet\), a 'table' .* or a 'spark_t"):
        observed(tmp_path, {"location": "orders.parquet"})


def test_a_partitioned_source_is_refused_naming_it(tmp_path):
    ORDERS.to_parquet(tmp_path / "orders.parquet")
    spec = dg.AssetSpec(ORDERS_KEY, partitions_def=dg.StaticPartitionsDefinition(["a"]))
    with pytest.raises(ValueError, match=r"observed source raw/orders is partitioned"):
        observed_source(spec, ParquetSource(path=str(tmp_path / "orders.parquet")))


@pytest.mark.smoke
def test_observing_an_asset_the_definitions_materialise_is_refused(tmp_path):
    ORDERS.to_parquet(tmp_path / "orders.parquet")

    @dg.asset(key=ORDERS_KEY)
    def orders() -> pd.DataFrame:
        return ORDERS

    with pytest.raises(
        ValueError, match=r"observe names raw/orders, which the Definitions materialise"
    ):
        with_ubunye(
            dg.Definitions(assets=[orders]),
            observe={"raw/orders": {"path": str(tmp_path / "orders.parquet")}},
        )


def test_a_content_condition_on_an_asset_stored_without_receipts_is_refused_naming_it():
    @dg.asset(io_manager_key="plain", automation_condition=on_content_change())
    def totals() -> int:
        return 1

    defs = dg.Definitions(assets=[totals], resources={"plain": dg.FilesystemIOManager()})
    with pytest.raises(
        ValueError, match=r"on_content_change\(\) is set on totals, stored without receipts"
    ):
        with_ubunye(defs)


@pytest.mark.smoke
def test_an_observed_source_needs_no_io_manager_and_gets_no_reproducibility_check(tmp_path):
    ORDERS.to_parquet(tmp_path / "orders.parquet")
    defs = observed(tmp_path, {"path": str(tmp_path / "orders.parquet")})

    assert isinstance(defs.resources["io_manager"], UbunyeIOManager)
    assert isinstance(defs.resources["ubunye"], UbunyeResource)
    checked = {key.asset_key for checks in defs.asset_checks or [] for key in checks.check_keys}
    assert ORDERS_KEY not in checked
