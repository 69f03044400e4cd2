"""The dbt scenarios several test modules read, each built once per test session into a folder
of it (tests/session_builds.py; the fixtures are in tests/conftest.py): what each build leaves
is files (a home, records, the DuckDB file), and the answer is JSON."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from dbt_shop import copy_shop

from example_project.run import build_dbt_before_and_after_a_seed_change


def build_quick_start(home: Path) -> list[str]:
    """The quick start's dbt half in ``home``: built, one seed changed, built again; the two
    run ids."""
    with dg.DagsterInstance.ephemeral() as instance:
        runs = build_dbt_before_and_after_a_seed_change(home, instance)
    return [run.run_id for run in runs]


def build_shop_on_duckdb(root: Path) -> str:
    """The example's dbt project copied under ``root`` and built once on DuckDB; the run id."""
    with pytest.MonkeyPatch.context() as monkeypatch, dg.DagsterInstance.ephemeral() as instance:
        return copy_shop(root, monkeypatch).materialise(instance).run_id
