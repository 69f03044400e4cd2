"""Dagster glue for ubunye_core: an IO manager, a resource and a drift sensor."""

from __future__ import annotations

from ubunye_dagster.expectations import ExpectationError, ExpectationFailed
from ubunye_dagster.io_manager import UbunyeIOManager, UnverifiedReadError
from ubunye_dagster.resource import Receipt, UbunyeResource

__all__ = [
    "ExpectationError",
    "ExpectationFailed",
    "Receipt",
    "UbunyeIOManager",
    "UbunyeResource",
    "UnverifiedReadError",
]

# --- drift sensor: the sensor helper names its factory; the lead adds it here ----------------
# from ubunye_dagster.sensor import <factory>
# __all__.append("<factory>")
