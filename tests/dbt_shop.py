"""The example's dbt project (example_project/dbt_shop) copied into a test's folder, built by
real dbt through ``@dbt_assets`` adopted in one line (shared by tests/test_dbt_*.py): on a DuckDB
file there, on a database of a temporary PostgreSQL cluster (the profile's ``postgres`` target),
or through the Thrift server of the tests' SparkSession (the ``spark`` target)."""

# No `from __future__ import annotations`: Dagster reads the asset function's annotations.

import contextlib
import functools
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest
from packaging.version import Version

dagster_dbt = pytest.importorskip("dagster_dbt", reason="the dbt extra is not installed")

from dbt_forks import dbt_launcher  # noqa: E402

from example_project.dbt_models import parsed_manifest  # noqa: E402
from ubunye_core.records.drift import INPUTS_CHANGED, SAME_INPUTS  # noqa: E402
from ubunye_core.records.model import RunRecord  # noqa: E402
from ubunye_core.store import LineageStore  # noqa: E402
from ubunye_dagster import UbunyeResource, build_drift_sensor, with_ubunye  # noqa: E402
from ubunye_dagster.dbt import with_dbt_receipts  # noqa: E402
from ubunye_dagster.receipts import metadata as keys  # noqa: E402
from ubunye_rows import environment_hash, fingerprint_arrow  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project" / "dbt_shop"
#: The profile's variable naming the DuckDB file.
DATABASE_ENV = "UBUNYE_DBT_SHOP_DB"
#: The profile's variables choosing its target, and the PostgreSQL database of ``postgres``.
TARGET_ENV = "UBUNYE_DBT_SHOP_TARGET"
POSTGRES_ENV = {
    "host": "UBUNYE_DBT_SHOP_PG_HOST",
    "port": "UBUNYE_DBT_SHOP_PG_PORT",
    "user": "UBUNYE_DBT_SHOP_PG_USER",
    "password": "UBUNYE_DBT_SHOP_PG_PASSWORD",
    "dbname": "UBUNYE_DBT_SHOP_PG_DBNAME",
}
#: The profile's variable naming the port of the ``spark`` target's Thrift server.
SPARK_PORT_ENV = "UBUNYE_DBT_SHOP_SPARK_PORT"
MODELS = ("raw_customers", "raw_orders", "stg_orders", "customer_revenue")


class InstalledDbtCli(dagster_dbt.DbtCliResource):
    """dagster-dbt's resource on the dbt-core this venv installed: its version is read from the
    package, where dagster-dbt (0.27+) runs ``dbt --version`` for each run, 2.8 s of CPU. The
    shop runs it with ``dbt_launcher()`` (tests/dbt_forks.py): dbt forked, its imports done once."""

    @functools.cached_property
    def _cli_version(self) -> Version:
        return Version(version("dbt-core"))


@dataclass
class DbtShop:
    """The copied project, its database file and where records go."""

    root: Path

    @property
    def project_dir(self) -> Path:
        return self.root / "dbt_shop"

    @property
    def database(self) -> Path:
        return self.root / "shop.duckdb"

    def write(self, relative: str, text: str) -> None:
        """Add or replace a file of the dbt project (a model, a seed, a source)."""
        path = self.project_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def dbt(self) -> dagster_dbt.DbtCliResource:
        return InstalledDbtCli(
            project_dir=str(self.project_dir),
            profiles_dir=str(self.project_dir),
            dbt_executable=dbt_launcher(),
        )

    def assets(self) -> dg.AssetsDefinition:
        """``@dbt_assets`` of the project as it is now (parsed again when a file of it changed
        since the last parse; the example's rule), with receipts."""
        # The manifest itself, not its path: dagster-dbt keeps the first manifest read from one.
        manifest = parsed_manifest(self.project_dir, dbt_launcher())

        @dagster_dbt.dbt_assets(manifest=manifest)
        def shop(
            context: dg.AssetExecutionContext,
            dbt: dagster_dbt.DbtCliResource,
            ubunye: UbunyeResource,
        ):
            yield from with_dbt_receipts(
                dbt.cli(["build"], context=context), context=context, ubunye=ubunye
            )

        return shop

    def definitions(self) -> dg.Definitions:
        """The project's Definitions adopted with ``with_ubunye``, records under ``root``."""
        defs = dg.Definitions(assets=[self.assets()], resources={"dbt": self.dbt()})
        return with_ubunye(defs, usecase_dir=str(self.root), base_path=str(self.root / "data"))

    def materialise(
        self, instance: dg.DagsterInstance | None = None, raise_on_error: bool = True
    ) -> dg.ExecuteInProcessResult:
        """One run of every dbt node (``dbt build``)."""
        defs = self.definitions()
        assets = [a for a in defs.assets if isinstance(a, dg.AssetsDefinition)]
        return dg.materialize(
            assets,
            resources=defs.resources,
            instance=instance,
            raise_on_error=raise_on_error,
        )

    def record(self, asset: str, run_id: str) -> RunRecord:
        """The run record of ``asset`` (group ``default``) in run ``run_id``."""
        return LineageStore.for_usecase_dir(self.root).load(f"dagster/default/{asset}", run_id)

    def outputs(self, run_id: str) -> dict[str, Any]:
        """``{node: output step}`` of each seed and model of the example in run ``run_id``."""
        return {node: self.record(node, run_id).outputs[-1] for node in MODELS}

    def digest_read_through_duckdb(self, table: str) -> str | None:
        """rows-v1 of ``main.<table>`` read by DuckDB itself into Arrow (the independent check).
        Opened as dagster-dbt's adapter opens it (read only): DuckDB refuses a second
        configuration of a file in one process, and that adapter keeps its connection open."""
        read_only = {"access_mode": "READ_ONLY"}
        with duckdb.connect(str(self.database), config=read_only) as connection:
            table = connection.sql(f"select * from main.{table}").to_arrow_table()
        return fingerprint_arrow(table).data_hash


def copy_shop(root: Path, monkeypatch: pytest.MonkeyPatch) -> DbtShop:
    """The example's dbt project copied under ``root``, its DuckDB file there too."""
    ignored = shutil.ignore_patterns("target", "logs", "*.duckdb*", ".user.yml")
    shutil.copytree(EXAMPLE, root / "dbt_shop", ignore=ignored)
    shop = DbtShop(root)
    monkeypatch.setenv(DATABASE_ENV, str(shop.database))
    monkeypatch.setenv(TARGET_ENV, "dev")
    return shop


def copy_shop_on_postgres(
    root: Path, monkeypatch: pytest.MonkeyPatch, cluster: Any, dbname: str
) -> DbtShop:
    """The example's dbt project copied under ``root``, built in a new database ``dbname`` of
    the running PostgreSQL ``cluster`` (tests/postgres_cluster.py) through the profile's
    ``postgres`` target."""
    import psycopg2

    with contextlib.closing(psycopg2.connect(cluster.url)) as connection:
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{dbname}"')
    shop = copy_shop(root, monkeypatch)
    monkeypatch.setenv(TARGET_ENV, "postgres")
    for field, variable in POSTGRES_ENV.items():
        value = dbname if field == "dbname" else getattr(cluster, field)
        monkeypatch.setenv(variable, str(value))
    return shop


def copy_shop_on_spark(root: Path, monkeypatch: pytest.MonkeyPatch, port: int) -> DbtShop:
    """The example's dbt project copied under ``root``, built through the Spark Thrift server on
    ``port`` (tests/local_spark.py) by the profile's ``spark`` target."""
    shop = copy_shop(root, monkeypatch)
    monkeypatch.setenv(TARGET_ENV, "spark")
    monkeypatch.setenv(SPARK_PORT_ENV, str(port))
    return shop


def assert_environment_names(record: RunRecord, adapter: str, driver: str) -> None:
    """The record's environment names dbt-core, the adapter and its driver at their installed
    versions, its hash is the environment's, and its backend the adapter."""
    packages = record.environment["packages"]
    for name in ("dbt-core", "dbt-adapters", f"dbt-{adapter}", driver):
        assert packages[name] == version(name), name
    assert record.environment_hash == environment_hash(record.environment)
    assert record.backend == f"dbt-{adapter}"


#: A model whose rows differ on every build from the same code, inputs and environment.
LUCKY_DRAW = "select order_id, random() as draw from {{ ref('raw_orders') }}\n"


def judged(instance: dg.DagsterInstance) -> dict[str, dg.AssetCheckEvaluation]:
    """The drift sensor's latest verdict on each asset, after one tick over every receipt."""
    data = build_drift_sensor(None).evaluate_tick(dg.build_sensor_context(instance=instance))
    return {event.asset_key.to_user_string(): event for event in data.asset_events}


def assert_inputs_are_the_upstream_receipts(shop: DbtShop, run_id: str) -> None:
    """``customer_revenue``'s inputs in run ``run_id`` are its parents' receipts of that run."""
    record = shop.record("customer_revenue", run_id)
    by_name = {step.name: step for step in record.inputs}
    assert set(by_name) == {"raw_customers", "stg_orders"}
    for name, step in by_name.items():
        assert step.data_hash == shop.record(name, run_id).outputs[-1].data_hash


def assert_only_the_random_model_flagged(verdicts: dict[str, dg.AssetCheckEvaluation]) -> None:
    """``lucky_draw`` built twice is flagged ``same inputs``; the steady models are unchanged."""
    assert not verdicts["lucky_draw"].passed
    assert verdicts["lucky_draw"].metadata["ubunye/reason"].value == SAME_INPUTS
    for steady in ("stg_orders", "customer_revenue"):
        assert verdicts[steady].passed, steady
        assert verdicts[steady].metadata["ubunye/verdict"].value == "unchanged"


def judged_after_a_seed_change(shop: DbtShop, instance: dg.DagsterInstance) -> dict[str, Any]:
    """The verdicts after ``shop`` is built again with one order of its seed corrected."""
    seed = shop.project_dir / "seeds" / "raw_orders.csv"
    seed.write_text(seed.read_text().replace("7.25", "8.25"), encoding="utf-8")
    shop.materialise(instance)
    return judged(instance)


def assert_the_seed_change_explained(verdicts: dict[str, dg.AssetCheckEvaluation]) -> None:
    """The changed seed is explained by its file; the models downstream by their inputs."""
    for steady in ("raw_customers", "stg_orders", "customer_revenue"):
        assert verdicts[steady].passed, steady
    for downstream in ("stg_orders", "customer_revenue"):
        assert verdicts[downstream].metadata["ubunye/reason"].value == INPUTS_CHANGED
    assert verdicts["raw_orders"].metadata["ubunye/verdict"].value == "explained"


def materialised(instance: dg.DagsterInstance, asset: str) -> list[dg.AssetMaterialization]:
    """The latest materialisations of ``asset`` in the event log."""
    records = instance.fetch_materializations(dg.AssetKey(asset), limit=5).records
    return [record.asset_materialization for record in records]


@dataclass
class WatchedBuild:
    """What was seen of a build of the shop (its last model, ``slow_count``, taking a while) run
    on a thread: ``stg_orders``' materialisations when first seen, whether dbt had built the last
    model by then, its materialisations once the build ended, and the run (or its error)."""

    seen: list[dg.AssetMaterialization]
    built_before: bool
    finished: list[dg.AssetMaterialization]
    run: dg.ExecuteInProcessResult | None
    error: BaseException | None


def watch_a_build(
    shop: DbtShop,
    instance: dg.DagsterInstance,
    last_model_built: Callable[[], bool],
    timeout: float = 300,
) -> WatchedBuild:
    """Build ``shop`` into ``instance`` (where ``stg_orders`` has no materialisation yet) on a
    thread, watching for ``stg_orders`` to show and asking ``last_model_built()`` then."""
    outcome: dict[str, Any] = {}

    def build() -> None:
        try:
            outcome["run"] = shop.materialise(instance)
        except BaseException as error:  # handed back to the caller's thread
            outcome["error"] = error

    thread = threading.Thread(target=build)
    thread.start()
    deadline = time.monotonic() + timeout
    while not materialised(instance, "stg_orders") and time.monotonic() < deadline:
        time.sleep(0.1)
    seen = materialised(instance, "stg_orders")
    built_before = last_model_built()
    thread.join(timeout=2 * timeout)
    finished = materialised(instance, "slow_count")
    return WatchedBuild(seen, built_before, finished, outcome.get("run"), outcome.get("error"))


def assert_a_model_showed_while_the_build_went_on(watched: WatchedBuild) -> None:
    """``stg_orders`` showed with its receipt before dbt had built the build's last model."""
    assert watched.seen, "stg_orders never showed as materialised"
    assert keys.DATA_HASH in watched.seen[0].metadata
    assert not watched.built_before, "stg_orders showed only once dbt had built its last model"
    assert watched.finished, "the build did not finish its last model"


class ReceiptsOnAnAdapter:
    """The promises every dbt adapter's receipts keep, for a test module with a module fixture
    ``drawn_twice`` (the shop on the adapter with ``LUCKY_DRAW``, built twice: shop, instance,
    runs). A subclass named ``Test...`` says the class attributes below."""

    adapter: str
    driver: str
    #: A relation's name as the adapter renders it, ``{relation}`` standing for it.
    location: str
    #: rows-v1 of a relation's rows read out of the warehouse by the kernel, given the test's
    #: fixtures: ``read_out(request, relation)``.
    read_out: Callable[[pytest.FixtureRequest, str], str]

    def test_each_dbt_node_gets_a_receipt_hashed_in_the_warehouse(self, drawn_twice):
        shop, _, runs = drawn_twice
        for asset in (*MODELS, "lucky_draw"):
            output = shop.record(asset, runs[-1].run_id).outputs[-1]
            assert output.hash_error is None, (asset, output.hash_error)
            assert output.hash_method == "rows-v1" and output.data_hash.startswith("sha256:")
            assert output.location == self.location.format(relation=asset)
            assert output.format == self.adapter

    def test_the_digest_in_the_warehouse_is_the_kernels_on_the_rows_read_out(
        self, drawn_twice, request
    ):
        shop, _, runs = drawn_twice
        for asset in MODELS:
            recorded = shop.record(asset, runs[-1].run_id).outputs[-1].data_hash
            assert recorded == self.read_out(request, asset), asset

    def test_the_environment_names_the_adapter_and_its_driver(self, drawn_twice):
        shop, _, runs = drawn_twice
        record = shop.record("stg_orders", runs[-1].run_id)
        assert_environment_names(record, self.adapter, self.driver)

    def test_the_inputs_are_the_upstream_receipts_of_the_same_build(self, drawn_twice):
        shop, _, runs = drawn_twice
        assert_inputs_are_the_upstream_receipts(shop, runs[-1].run_id)

    def test_a_non_deterministic_model_is_flagged(self, drawn_twice):
        _, instance, _ = drawn_twice
        assert_only_the_random_model_flagged(judged(instance))

    @pytest.fixture(scope="class")
    def seed_changed(self, drawn_twice):
        """The verdicts after a third build, a seed changed (after the tests above)."""
        shop, instance, _ = drawn_twice
        return judged_after_a_seed_change(shop, instance)

    def test_a_changed_seed_is_explained_by_its_input(self, seed_changed):
        assert_the_seed_change_explained(seed_changed)
