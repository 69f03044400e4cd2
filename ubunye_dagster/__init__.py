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
from ubunye_dagster.adoption import ReceiptSettings, with_ubunye
from ubunye_dagster.automation import ParquetSource, TableSource, observed_source, on_content_change
from ubunye_dagster.drift_hooks import DriftVerdict
from ubunye_dagster.error_records import with_error_records
from ubunye_dagster.expectation_checks import build_expectation_checks
from ubunye_dagster.expectations import (
    ExpectationError,
    ExpectationFailed,
    validate_declared_expectations,
)
from ubunye_dagster.failed_steps import build_failed_steps_sensor
from ubunye_dagster.io_manager import UbunyeIOManager
from ubunye_dagster.notifiers import slack_notifier, webhook_notifier
from ubunye_dagster.pipeline import UnverifiedReadError
from ubunye_dagster.pipes import PipesReceipts
from ubunye_dagster.resource import Receipt, UbunyeResource
from ubunye_dagster.sensor import (
    CHECK_NAME,
    DRIFT_TAG,
    build_drift_sensor,
    build_reproducibility_checks,
)
from ubunye_dagster.warehouse import Warehouse
from ubunye_dagster.wrapped_io_manager import ReceiptIOManager, with_receipts

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
