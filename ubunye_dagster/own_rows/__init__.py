"""Receipts for assets that store their own rows: ``record_output`` and Dagster Pipes."""
