"""The README's example outputs are what the code writes: a fresh run reproduces every block
(run ids, times, durations, digests and versions aside)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "readme_examples.py"


@pytest.fixture(scope="module")
def examples():
    spec = importlib.util.spec_from_file_location("readme_examples", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def fresh(examples):
    return examples.fresh_blocks()


def test_the_readme_record_trace_and_compare_blocks_match_a_fresh_run(examples, fresh):
    readme = examples.README.read_text(encoding="utf-8")
    assert set(examples.readme_blocks(readme)) == {"record", "trace", "compare"}
    problems = examples.disagreements(readme, fresh)
    assert not problems, "run `python scripts/readme_examples.py`:\n" + "".join(problems)


def test_a_readme_block_that_names_what_records_never_contain_is_caught(examples, fresh):
    readme = examples.README.read_text(encoding="utf-8")
    wrong = readme.replace('"rule": "id_not_null"', '"rule": "not_null(id)"', 1)
    assert wrong != readme
    [problem] = examples.disagreements(wrong, fresh)
    assert "not_null(id)" in problem and "README record" in problem
