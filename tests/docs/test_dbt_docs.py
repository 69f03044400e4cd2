"""docs/dbt.md shows what a real run prints: a fresh run of scripts/dbt_examples.py reproduces
every block (run ids, times, durations, digests and versions aside), and a drifted block is
caught."""

from __future__ import annotations

import runpy
from pathlib import Path
from types import SimpleNamespace

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "dbt_examples.py"


@pytest.fixture(scope="module")
def examples() -> SimpleNamespace:
    """The script's functions and constants, run as a module of its own."""
    return SimpleNamespace(**runpy.run_path(str(SCRIPT), run_name="dbt_examples"))


@pytest.fixture(scope="module")
def fresh(examples: SimpleNamespace, dbt_quick_start) -> dict[str, str]:
    """The page's blocks from a copy of the session's home where the quick start's dbt half
    ran (the script's own run, without building that half again)."""
    home, _ = dbt_quick_start
    return examples.fresh_blocks(home)


def test_the_dbt_page_blocks_match_a_fresh_run(examples, fresh):
    text = examples.DOC.read_text(encoding="utf-8")
    assert set(examples.examples.readme_blocks(text, examples.MARKER)) == set(examples.BLOCKS)
    problems = examples.disagreements(text, fresh)
    assert not problems, "run `python scripts/dbt_examples.py`:\n" + "".join(problems)


def test_a_diff_block_naming_other_buckets_is_caught(examples, fresh):
    text = examples.DOC.read_text(encoding="utf-8")
    wrong = text.replace("buckets differing: 2 of 256", "buckets differing: 3 of 256", 1)
    assert wrong != text
    [problem] = examples.disagreements(wrong, fresh)
    assert "3 of 256" in problem and "docs/dbt.md diff" in problem
