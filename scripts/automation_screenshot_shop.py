"""The code location ``scripts/automation_screenshot.py`` serves: one Parquet source observed by
its rows and four assets on ``on_content_change()``, the automation sensor ticking every 5 s.

``raw/orders`` (the source) -> ``orders`` -> ``totals`` (amount by region) and ``regions`` (the
regions sold to) -> ``region_labels``. When the orders' amounts change, ``orders``, ``totals``
and ``regions`` run again, ``regions`` with the same rows, so ``region_labels`` is not
requested. The folder of the source, data and records: ``$UBUNYE_AUTOMATION_SHOP_DIR``.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import pandas as pd

from ubunye_dagster import with_ubunye
from ubunye_dagster.automation import on_content_change

DIR_ENV = "UBUNYE_AUTOMATION_SHOP_DIR"
SOURCE = dg.AssetKey(["raw", "orders"])
SENSOR = "content_automation"
SENSOR_INTERVAL_SECONDS = 5
#: The asset that is not requested when only the amounts change.
UNCHANGED = dg.AssetKey("region_labels")


def source_path(folder: Path) -> Path:
    return folder / "sources" / "orders.parquet"


def source_rows(day: int) -> pd.DataFrame:
    """The orders on ``day``: the same orders and regions every day, the amounts moving."""
    ids = range(12)
    regions = ("north", "south", "east")
    return pd.DataFrame(
        {
            "order_id": list(ids),
            "region": [regions[i % len(regions)] for i in ids],
            "amount": [(i * 7 + day * 5) % 31 for i in ids],
        }
    )


def assets(path: Path) -> list[dg.AssetsDefinition]:
    """The four assets below the source."""

    @dg.asset(deps=[SOURCE])
    def orders() -> pd.DataFrame:
        return pd.read_parquet(path).sort_values("order_id").reset_index(drop=True)

    @dg.asset
    def totals(orders: pd.DataFrame) -> pd.DataFrame:
        return orders.groupby("region", as_index=False)["amount"].sum()

    @dg.asset
    def regions(orders: pd.DataFrame) -> pd.DataFrame:
        return orders[["region"]].drop_duplicates().sort_values("region").reset_index(drop=True)

    @dg.asset(key=UNCHANGED)
    def region_labels(regions: pd.DataFrame) -> pd.DataFrame:
        return regions.assign(label=regions["region"].str.title())

    return [orders, totals, regions, region_labels]


def definitions(folder: Path) -> dg.Definitions:
    """The source observed by its rows, the assets on ``on_content_change()``, and the sensor."""
    sensor = dg.AutomationConditionSensorDefinition(
        SENSOR,
        target=dg.AssetSelection.all(),
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=SENSOR_INTERVAL_SECONDS,
        use_user_code_server=True,
    )
    defs = dg.Definitions(
        assets=[dg.AssetSpec(SOURCE), *assets(source_path(folder))],
        sensors=[sensor],
        executor=dg.in_process_executor,
    )
    return with_ubunye(
        defs,
        observe={SOURCE.to_user_string(): {"path": str(source_path(folder))}},
        automation=on_content_change(),
        usecase_dir=str(folder),
        base_path=str(folder / "data"),
        drift_sensor=None,
    )


if DIR_ENV in os.environ:
    defs = definitions(Path(os.environ[DIR_ENV]))
