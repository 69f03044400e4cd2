"""The pages say what is true now: no page under docs/ nor the README speaks of issues, passes
or earlier runs (that is git's history), and the speed page stays a page of current figures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
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
