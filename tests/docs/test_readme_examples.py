"""The documented example outputs (in the README or a page under docs/) are what the code writes:
a fresh run reproduces every block (run ids, times, durations, digests and versions aside)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "readme_examples.py"


@pytest.fixture(scope="module")
def examples():
    spec = importlib.util.spec_from_file_location("readme_examples", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def fresh(examples):
    return examples.fresh_blocks()


def test_the_record_trace_compare_and_diff_blocks_match_a_fresh_run(examples, fresh):
    texts = examples.documents()
    assert set(examples.shown_blocks(texts)) == {
        "record",
        "trace",
        "compare",
        "diff",
        "drift-tick",
        "drift-verdict",
        "warehouse-trace",
    }
    problems = examples.disagreements(texts, fresh)
    assert not problems, "run `python scripts/readme_examples.py`:\n" + "".join(problems)


def caught(examples, fresh, block: str, shown: str, altered: str) -> tuple[str, str]:
    """The one problem found when the docs' ``block`` shows ``altered`` in place of ``shown``,
    and the page and block it should name."""
    texts = examples.documents()
    path, _ = examples.shown_blocks(texts)[block]
    wrong = texts[path].replace(shown, altered, 1)
    assert wrong != texts[path]
    [problem] = examples.disagreements({**texts, path: wrong}, fresh)
    return problem, f"{path.relative_to(examples.ROOT)} {block}"


def test_a_block_that_names_what_records_never_contain_is_caught(examples, fresh):
    problem, where = caught(
        examples, fresh, "record", '"rule": "id_not_null"', '"rule": "not_null(id)"'
    )
    assert "not_null(id)" in problem and where in problem


def test_a_diff_block_showing_other_rows_is_caught(examples, fresh):
    problem, where = caught(
        examples, fresh, "diff", "unit_price: 29.96 -> 32.96", "unit_price: 29.96 -> 31.96"
    )
    assert "31.96" in problem and where in problem


def test_a_block_moved_to_a_page_under_docs_is_still_found(examples, fresh):
    texts = examples.documents()
    path, block = examples.shown_blocks(texts)["compare"]
    marked = f"<!-- readme-example: compare -->\n```\n{block}```\n"
    assert marked in texts[path]
    moved = {p: t.replace(marked, "") for p, t in texts.items()}
    moved[examples.DOCS / "moved.md"] = f"# Moved\n\n{marked}"
    assert examples.shown_blocks(moved)["compare"][0] == examples.DOCS / "moved.md"
    assert not examples.disagreements(moved, fresh)
