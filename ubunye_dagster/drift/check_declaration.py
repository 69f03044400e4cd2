"""``build_reproducibility_checks``: the ``ubunye_reproducible`` check declared on watched
assets, so the Dagster UI shows it and its own step judges the latest materialisation."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import dagster as dg

from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.checks.expectations import validate_declared_expectations
from ubunye_dagster.drift.check_spec import (
    CHECK_NAME,
    CHECK_SETTINGS,
    CoercibleToWatchedAsset,
    declared_deterministic,
    watched_asset_keys,
)
from ubunye_dagster.drift.sensor import judge_latest
from ubunye_dagster.drift.settings import DriftJudging, DriftSettings

#: The name of the checks' step (its op) unless given another.
CHECKS_NAME = "ubunye_reproducibility_checks"
#: The judging settings a check is declared with unless given others.
_DEFAULT = DriftJudging()


def build_reproducibility_checks(
    assets: Iterable[CoercibleToWatchedAsset],
    *,
    name: str = CHECKS_NAME,
    flag_reasons: Iterable[str] = _DEFAULT.flag_reasons,
    strict_sources: bool = _DEFAULT.strict_sources,
    use_lineage_store: bool = _DEFAULT.use_lineage_store,
    storage_options: Mapping[str, Any] | None = None,
) -> list[dg.AssetChecksDefinition]:
    """Declare the `ubunye_reproducible` check on each asset, so the UI shows its verdicts.

    An asset stored through the Ubunye IO manager gets its verdict in its own step, as its
    receipt is written; the check's step judges, in a run, only the selected assets that no
    step judged, and executed by hand the asset's latest materialisation. The drift sensor
    reports the same verdicts for every materialisation; records are read with `storage_options`.
    """
    judging = DriftJudging(
        flag_reasons=flag_reasons,
        strict_sources=strict_sources,
        use_lineage_store=use_lineage_store,
    )
    return reproducibility_checks(judging, assets, name=name, storage_options=storage_options)


def reproducibility_checks(
    judging: DriftJudging,
    assets: Iterable[CoercibleToWatchedAsset],
    *,
    name: str = CHECKS_NAME,
    storage_options: Mapping[str, Any] | None = None,
) -> list[dg.AssetChecksDefinition]:
    """`build_reproducibility_checks` judging as ``judging`` says (the drift sensor's settings,
    for one verdict from both)."""
    assets = list(assets)
    validate_declared_expectations(assets)
    settings = DriftSettings.of_terms(judging, declared_deterministic(assets), storage_options)
    specs = [
        dg.AssetCheckSpec(
            CHECK_NAME,
            asset=key,
            description=(
                "Reproducible: the data does not change unless the code, the environment or an "
                "input did (judged as the Ubunye drift sensor judges)."
            ),
            metadata={CHECK_SETTINGS: settings.check_metadata(key.to_user_string())},
        )
        for key in watched_asset_keys(assets)
    ]

    @dg.multi_asset_check(specs=specs, name=name, can_subset=True)
    def _reproducibility(context) -> Iterator[dg.AssetCheckResult]:
        # No annotation on context: Dagster refuses the postponed (string) annotation.
        run_id = context.op_execution_context.run_id
        judged = internals.checks_evaluated_in_run(context.instance, run_id)
        for check_key in sorted(
            set(context.selected_asset_check_keys) - judged,
            key=lambda k: k.asset_key.to_user_string(),
        ):
            yield judge_latest(context.instance, check_key.asset_key, settings)

    return [internals.kept_as_checks(_reproducibility)]
