"""Run what changed, under the real automation daemon (``dagster-daemon run``): three sources
observed by their rows, nine assets on ``on_content_change()``. Day 0 builds everything; on
each later day every source file is written again, one with new rows and the others with the
same rows in another order. Only the changed source's downstream cone runs, and the digests of
every asset at the end are those of running everything every day. Each level of the cone is a
run of its own, requested by a tick once the level above is done: the automation sensor ticks
every 2 s and the run queue hands out runs every second (Dagster's defaults: 5 s each)."""

from __future__ import annotations

import dagster as dg
import pytest
from automation_daemon import Shop, daemon_over, data_version, materialisations

#: The days after day 0, and the source whose rows change on each.
CHANGES = {1: {0}, 2: {2}}


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    """The daemon over the shop through day 0 and every day of ``CHANGES``: the shop, the
    materialisation counts after each day, and the instance."""
    shop = Shop(tmp_path_factory.mktemp("content-shop"), sources=3, depth=2, tick_seconds=2)
    counts: list[dict[dg.AssetKey, int]] = []
    with daemon_over(shop, quick=True) as daemon:
        for day, changed in [(0, set()), *CHANGES.items()]:
            daemon.day(day, changed)
            counts.append({key: materialisations(daemon.instance, key) for key in shop.assets()})
        versions = {key: data_version(daemon.instance, key) for key in shop.assets()}
        failed = daemon.failed_runs()
    return shop, counts, versions, failed


def test_the_shop_has_nine_assets_below_three_sources(days):
    shop, _, _, _ = days

    assert (shop.sources, len(shop.assets())) == (3, 9)


def test_day_zero_builds_every_asset_once(days):
    _, counts, _, failed = days

    assert failed == []
    assert set(counts[0].values()) == {1}


@pytest.mark.parametrize("day", sorted(CHANGES))
def test_only_the_changed_sources_downstream_cone_runs(days, day):
    shop, counts, _, _ = days
    ran = {key for key in shop.assets() if counts[day][key] > counts[day - 1][key]}

    assert ran == shop.cone(CHANGES[day])
    assert all(counts[day][key] - counts[day - 1][key] == 1 for key in ran)


def test_the_digests_at_the_end_equal_those_of_running_everything_every_day(days, tmp_path_factory):
    _, _, versions, _ = days
    eager = Shop(tmp_path_factory.mktemp("everything-every-day"), sources=3, depth=2)
    with dg.instance_for_test() as instance:
        for day, changed in [(0, set()), *CHANGES.items()]:
            eager.write_day(day, changed)
            eager.execute(instance, dg.AssetSelection.all())
        everything = {key: data_version(instance, key) for key in eager.assets()}

    assert None not in versions.values()
    assert versions == everything
