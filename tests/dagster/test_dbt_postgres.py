"""dbt on PostgreSQL: the example dbt project, unchanged but for its profile's target, built by
real dbt-postgres on a temporary PostgreSQL cluster; every model and seed gets its receipt hashed
in PostgreSQL through the dbt adapter's own connections, the drift sensor judges them as on
DuckDB, and each model shows in Dagster as dbt reports it done, while the build goes on."""

from __future__ import annotations

import contextlib
from functools import partial

import dagster as dg
import pytest
from dbt_shop import (
    LUCKY_DRAW,
    MODELS,
    ReceiptsOnAnAdapter,
    assert_a_model_showed_while_the_build_went_on,
    copy_shop_on_postgres,
    watch_a_build,
)
from postgres_cluster import postgres_available, postgres_cluster

from ubunye_rows.sql import fingerprint_postgres

pytest.importorskip("dbt.adapters.postgres", reason="the dbt-postgres extra is not installed")
adbc = pytest.importorskip("adbc_driver_postgresql.dbapi", reason="ADBC streams the check")
pytestmark = pytest.mark.skipif(
    not postgres_available(), reason="PostgreSQL's server binaries are not installed"
)

#: A model that takes a while, built after the others: the build is still going while it runs.
SLOW_MODEL = (
    "select count(*) as customers from {{ ref('customer_revenue') }}, "
    "(select pg_sleep(6)) as pause\n"
)


@pytest.fixture(scope="module")
def cluster():
    with postgres_cluster(dbname="admin") as pg:
        yield pg


@pytest.fixture(scope="module")
def first_build_watched(cluster, tmp_path_factory):
    """The shop on PostgreSQL with a non-deterministic model and a slow last model, built once on
    a thread while watched (one build serves both promises): shop, instance, what was seen."""
    with pytest.MonkeyPatch.context() as monkeypatch, dg.instance_for_test() as instance:
        root = tmp_path_factory.mktemp("dbt_pg")
        shop = copy_shop_on_postgres(root, monkeypatch, cluster, "shop")
        shop.write("models/lucky_draw.sql", LUCKY_DRAW)
        shop.write("models/slow_count.sql", SLOW_MODEL)
        slow_count_built = partial(_built_in_postgresql, cluster, "shop", "slow_count")
        yield shop, instance, watch_a_build(shop, instance, slow_count_built, timeout=120)


@pytest.fixture(scope="module")
def drawn_twice(first_build_watched):
    """The shop on PostgreSQL with a non-deterministic model (and the slow one), built twice,
    nothing changed."""
    shop, instance, watched = first_build_watched
    if watched.error is not None:
        raise watched.error
    return shop, instance, [watched.run, shop.materialise(instance)]


def streamed_digest(cluster, dbname: str, table: str) -> str | None:
    """rows-v1 of ``main.<table>`` with every column streamed out through ADBC to the kernel."""
    url = cluster.url.rsplit("/", 1)[0] + f"/{dbname}"
    with adbc.connect(url) as connection:
        return fingerprint_postgres(connection, ("main", table), kernel_columns="all").data_hash


def test_the_same_seeds_and_models_have_the_same_digests_on_duckdb(drawn_twice, dbt_shop_on_duckdb):
    on_postgres, _, runs = drawn_twice
    on_duckdb, duckdb_run_id = dbt_shop_on_duckdb
    for asset in MODELS:
        theirs = on_duckdb.record(asset, duckdb_run_id).outputs[-1]
        ours = on_postgres.record(asset, runs[-1].run_id).outputs[-1]
        assert theirs.format == "duckdb" and ours.format == "postgres"
        assert (ours.data_hash, ours.schema_hash) == (theirs.data_hash, theirs.schema_hash), asset


def read_out_through_adbc(request: pytest.FixtureRequest, relation: str) -> str:
    """rows-v1 of ``main.<relation>`` in the shop's database, streamed out through ADBC."""
    return streamed_digest(request.getfixturevalue("cluster"), "shop", relation)


class TestReceiptsOnPostgres(ReceiptsOnAnAdapter):
    adapter, driver = "postgres", "psycopg2-binary"
    location = '"shop"."main"."{relation}"'
    read_out = staticmethod(read_out_through_adbc)


def _built_in_postgresql(cluster, dbname: str, table: str) -> bool:
    """Whether dbt has created ``main.<table>`` in ``dbname`` (committed, so others see it)."""
    import psycopg2

    url = cluster.url.rsplit("/", 1)[0] + f"/{dbname}"
    with contextlib.closing(psycopg2.connect(url)) as connection, connection.cursor() as cursor:
        cursor.execute("select to_regclass(%s) is not null", (f"main.{table}",))
        return bool(cursor.fetchone()[0])


def test_each_model_shows_with_its_receipt_while_the_build_goes_on(first_build_watched):
    _, _, watched = first_build_watched
    assert_a_model_showed_while_the_build_went_on(watched)
