"""Dagster glue for ubunye_core: an IO manager, a resource and a drift sensor."""
