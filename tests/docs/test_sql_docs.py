"""docs/rows-v1-in-sql.md shows what its examples print when they are run."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

pytest.importorskip("duckdb")

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "sql_examples.py"


def _script():
    spec = importlib.util.spec_from_file_location("sql_examples", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_shows_what_its_examples_print() -> None:
    script = _script()
    text = script.PAGE.read_text("utf-8")
    assert script.EXAMPLE.search(text), "the page lost its example"
    assert script.refreshed(text) == text, f"run python {SCRIPT} to refresh the page"


def test_a_changed_output_is_noticed() -> None:
    script = _script()
    text = script.PAGE.read_text("utf-8")
    stale = text.replace("```text\n3 sha256:", "```text\n4 sha256:", 1)
    assert stale != text
    assert script.refreshed(stale) == text
