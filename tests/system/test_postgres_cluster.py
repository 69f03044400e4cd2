"""The temporary PostgreSQL cluster the deployment test and bench run Dagster on."""

from __future__ import annotations

import pytest
from postgres_cluster import postgres_available, postgres_cluster

pytestmark = pytest.mark.skipif(
    not postgres_available(), reason="no PostgreSQL server binaries (Debian `postgresql`)"
)


def test_cluster_keeps_its_data_across_a_restart() -> None:
    import psycopg2

    with postgres_cluster() as pg:
        with psycopg2.connect(pg.url) as connection, connection.cursor() as cursor:
            cursor.execute("CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)")
        connection.close()
        pg.restart()
        with psycopg2.connect(pg.url) as connection, connection.cursor() as cursor:
            cursor.execute("SELECT n FROM kept")
            assert cursor.fetchall() == [(7,)]
        connection.close()


def test_cluster_folder_is_removed_when_the_block_ends() -> None:
    with postgres_cluster() as pg:
        folder = pg.data_dir.parent
        assert (pg.data_dir / "PG_VERSION").exists()
    assert not folder.exists()
