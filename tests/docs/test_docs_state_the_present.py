"""The pages say what is true now: no page under docs/, nor the README, nor bench/README.md speaks
of issues, passes or earlier runs (that is git's history), and the speed page and the benches'
page stay pages of current figures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

ROOT = Path(__file__).resolve().parents[2]
BENCH_PAGE = ROOT / "bench" / "README.md"
PAGES = [ROOT / "README.md", BENCH_PAGE, *sorted((ROOT / "docs").glob("*.md"))]
HISTORY = re.compile(r"\bissue [0-9]+|earlier runs\b|this pass|last session", re.IGNORECASE)


def test_no_page_speaks_of_issues_passes_or_earlier_runs():
    found = [
        f"{page.relative_to(ROOT)}:{number}: {line.strip()}"
        for page in PAGES
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if HISTORY.search(line)
    ]
    assert found == []


def test_the_speed_page_is_one_short_section_per_figure():
    text = (ROOT / "docs" / "speed.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 250
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    for section in sections:
        title = section.splitlines()[0]
        assert "**Now**" in section and "Command" in section, title


# What a page of figures keeps out besides the above: issue numbers however written, and figures
# told as a story of changes (before, since, until a change or a date).
BENCH_HISTORY = re.compile(
    r"\bissues?\b|#[0-9]+\b|\bearlier\b|\bbefore (this|the last) change|\b(since|until) "
    r"(issue|[0-9]{4}-)|\bresults on this machine\b",
    re.IGNORECASE,
)


def test_the_benches_page_is_one_short_section_per_bench_without_history():
    text = BENCH_PAGE.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 250
    sections = {
        section.splitlines()[0]: section for section in re.split(r"^## ", text, flags=re.M)[1:]
    }
    benches = sorted(
        path.name
        for path in [
            *(ROOT / "bench").glob("*_bench.py"),
            *(ROOT / "rows" / "benches").glob("*.rs"),
        ]
    )
    assert sorted(re.match(r"`([^`]+)`", title).group(1) for title in sections) == benches
    for title, section in sections.items():
        for field in ("**Measures**", "**Baseline", "**Goal", "**Now**", "**Command"):
            assert field in section, (title, field)
    history = [line.strip() for line in text.splitlines() if BENCH_HISTORY.search(line)]
    assert history == []
