"""A small shop pipeline on shipped CSV data, receipted by ubunye-dagster (pandas, polars,
Spark)."""

from example_project.definitions import defs

__all__ = ["defs"]
