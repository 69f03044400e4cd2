"""The example's dbt project, as the quick start runs it: built, one seed changed, built again;
its trace and its `lineage diff` (the dbt half of `python -m example_project`), in the home the
session's ``dbt_quick_start`` built once (tests/conftest.py); a project dbt cannot parse is
refused with dbt's own error."""

from __future__ import annotations

import shutil

import pytest

from example_project.dbt_models import DBT_PROJECT_DIR, parsed_manifest
from example_project.run import (
    SEED_CHANGE,
    SEED_FILE,
    TRACED_DBT_MODEL,
    dbt_diff_command,
    trace_command,
)
from ubunye_core.cli import main as ubunye_dagster_cli


def test_the_quick_start_changes_its_copy_of_the_seed_never_the_shipped_one(dbt_quick_start):
    home, _ = dbt_quick_start
    before, after = SEED_CHANGE
    assert before in (DBT_PROJECT_DIR / SEED_FILE).read_text(encoding="utf-8")
    assert after in (home / "data" / "dbt_shop" / SEED_FILE).read_text(encoding="utf-8")


def test_the_trace_of_the_dbt_model_shows_its_inputs_and_dbt_versions(dbt_quick_start, capsys):
    home, runs = dbt_quick_start
    assert ubunye_dagster_cli(trace_command(home, TRACED_DBT_MODEL)) == 0
    out = capsys.readouterr().out
    assert f"run {runs[-1]}" in out
    for shown in ("dbt_shop/stg_orders", "dbt_shop/raw_customers", "dbt-core", "dbt-duckdb"):
        assert shown in out, shown


def test_the_lineage_diff_after_the_seed_change_names_the_changed_buckets(dbt_quick_start, capsys):
    home, _ = dbt_quick_start
    assert ubunye_dagster_cli(dbt_diff_command(home)) == 1
    out = capsys.readouterr().out
    assert "buckets differing: 2 of 256 (at most 1 row removed, 1 added)" in out
    assert "its rows are a duckdb table, which lineage diff does not read back" in out


def test_a_project_dbt_cannot_parse_is_refused_naming_it_with_dbts_error(tmp_path):
    project = tmp_path / "dbt_shop"
    shutil.copytree(DBT_PROJECT_DIR, project, ignore=shutil.ignore_patterns("target", "logs"))
    (project / "models" / "broken.sql").write_text(
        "select * from {{ ref('no_such_model') }}\n", encoding="utf-8"
    )

    with pytest.raises(RuntimeError) as refused:
        parsed_manifest(project)

    assert f"dbt parse of {project} failed" in str(refused.value)
    assert "no_such_model" in str(refused.value)
    assert not (project / "target" / "manifest.json").exists()
