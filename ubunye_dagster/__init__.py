"""Dagster glue for ubunye_core: an IO manager, a resource and a drift sensor."""

from __future__ import annotations

from ubunye_core.records.drift import (
    DEFAULT_FLAG_REASONS,
    DRIFT_REASONS,
    INPUTS_CHANGED,
    INPUTS_UNKNOWN,
    SAME_INPUTS,
    SOURCE_EXPLANATION,
)
from ubunye_dagster.adoption.error_records import with_error_records
from ubunye_dagster.adoption.with_ubunye import ReceiptSettings, with_ubunye
from ubunye_dagster.automation import ParquetSource, TableSource, observed_source, on_content_change
from ubunye_dagster.checks.expectation_checks import build_expectation_checks
from ubunye_dagster.checks.expectations import (
    ExpectationError,
    ExpectationFailed,
    validate_declared_expectations,
)
from ubunye_dagster.drift.check_declaration import build_reproducibility_checks
from ubunye_dagster.drift.check_spec import CHECK_NAME
from ubunye_dagster.drift.hooks import DriftVerdict
from ubunye_dagster.drift.notifiers import slack_notifier, webhook_notifier
from ubunye_dagster.drift.run_tags import DRIFT_TAG
from ubunye_dagster.drift.sensor import build_drift_sensor
from ubunye_dagster.io.io_manager import UbunyeIOManager
from ubunye_dagster.io.pipeline import UnverifiedReadError
from ubunye_dagster.io.wrapped_io_manager import ReceiptIOManager, with_receipts
from ubunye_dagster.own_rows.pipes import PipesReceipts
from ubunye_dagster.receipts.failed_steps import build_failed_steps_sensor
from ubunye_dagster.resource import Receipt, UbunyeResource
from ubunye_dagster.warehouse.settings import StreamedWarehouse, Warehouse

__all__ = [
    "CHECK_NAME",
    "DEFAULT_FLAG_REASONS",
    "DRIFT_REASONS",
    "DRIFT_TAG",
    "INPUTS_CHANGED",
    "INPUTS_UNKNOWN",
    "SAME_INPUTS",
    "SOURCE_EXPLANATION",
    "DriftVerdict",
    "ExpectationError",
    "ExpectationFailed",
    "ParquetSource",
    "PipesReceipts",
    "Receipt",
    "ReceiptIOManager",
    "ReceiptSettings",
    "StreamedWarehouse",
    "TableSource",
    "UbunyeIOManager",
    "UbunyeResource",
    "UnverifiedReadError",
    "Warehouse",
    "build_drift_sensor",
    "build_expectation_checks",
    "build_failed_steps_sensor",
    "build_reproducibility_checks",
    "observed_source",
    "on_content_change",
    "slack_notifier",
    "validate_declared_expectations",
    "webhook_notifier",
    "with_error_records",
    "with_receipts",
    "with_ubunye",
]
