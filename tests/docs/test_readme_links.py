"""README.md is also shown away from the repository (PyPI, an sdist): each of its links must
work there. The rule: every link and image is absolute (or an in-page ``#anchor``), and one that
points into the repository's home names a file or folder that exists in this checkout."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser as the tomli package (a dependency of Dagster)
    import tomli as tomllib

from ubunye_core.openlineage.events import PRODUCER

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

FENCED = re.compile(r"^```.*?^```", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")
# [text](target "title") and ![alt](target); [label]: target; <a href=..> and <img src=..>.
INLINE = re.compile(r"(!?)\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$", re.M)
HTML = re.compile(r"<(a|img)\b[^>]*?\b(?:href|src)=[\"']([^\"']+)[\"']", re.I)


def repository_home() -> str:
    """The repository's home, as pyproject.toml names it."""
    with (ROOT / "pyproject.toml").open("rb") as handle:
        return tomllib.load(handle)["project"]["urls"]["Homepage"].rstrip("/")


def links_of(markdown: str) -> list[tuple[str, bool]]:
    """``(target, is_image)`` of every link outside code in ``markdown``."""
    text = INLINE_CODE.sub("", FENCED.sub("", markdown))
    found = [(m.group(2), m.group(1) == "!") for m in INLINE.finditer(text)]
    found += [(m.group(1), False) for m in REFERENCE.finditer(text)]
    found += [(m.group(2), m.group(1).lower() == "img") for m in HTML.finditer(text)]
    return found


def _repository_path(target: str, home: str) -> tuple[str, str] | None:
    """``(kind, path)`` of a link into the repository ('blob', 'tree' or 'raw'), else None."""
    owner_repo = home.removeprefix("https://github.com/")
    for prefix, kind in (
        (f"{home}/blob/main/", "blob"),
        (f"{home}/tree/main/", "tree"),
        (f"{home}/raw/main/", "raw"),
        (f"https://raw.githubusercontent.com/{owner_repo}/main/", "raw"),
    ):
        if target.startswith(prefix):
            return kind, target.removeprefix(prefix).split("#")[0].split("?")[0]
    return None


def link_problems(markdown: str, home: str, root: Path) -> list[str]:
    """Each link of ``markdown`` that would not work away from the repository, with why."""
    problems = []
    for target, is_image in links_of(markdown):
        if target.startswith("#") or (target.startswith("mailto:") and not is_image):
            continue
        if not re.match(r"https?://", target):
            problems.append(f"{target}: relative (use {home}/blob/main/...)")
            continue
        into = _repository_path(target, home)
        if into is None:
            continue  # another site
        kind, path = into
        exists = (root / path).is_dir() if kind == "tree" else (root / path).is_file()
        if not exists:
            problems.append(f"{target}: no {'folder' if kind == 'tree' else 'file'} {path}")
        elif is_image and kind != "raw":
            problems.append(f"{target}: an image must be the raw file ({home}/raw/main/...)")
    return problems


def test_every_readme_link_is_absolute_and_names_a_file_of_the_repository():
    home = repository_home()
    links = links_of(README.read_text(encoding="utf-8"))
    assert links, "README.md has no links: the checker is reading it wrong"
    assert link_problems(README.read_text(encoding="utf-8"), home, ROOT) == []


def test_the_repository_home_is_the_one_the_openlineage_producer_names():
    assert repository_home() == PRODUCER


@pytest.mark.parametrize(
    ("markdown", "problem"),
    [
        ("see [the IO manager](docs/io-manager.md)", "relative"),
        ("![UI](docs/ui-materialisation.png)", "relative"),
        ('<img src="docs/ui-materialisation.png">', "relative"),
        ("[x]: docs/io-manager.md", "relative"),
        ("[gone]({home}/blob/main/docs/no-such-page.md)", "no file"),
        ("[gone]({home}/tree/main/no-such-folder)", "no folder"),
        ("![UI]({home}/blob/main/docs/ui-materialisation.png)", "raw file"),
    ],
)
def test_a_link_that_would_break_away_from_the_repository_is_named(markdown, problem):
    home = repository_home()
    [found] = link_problems(markdown.format(home=home), home, ROOT)
    assert problem in found


def test_links_in_code_and_links_elsewhere_are_left_alone():
    home = repository_home()
    markdown = (
        "`[not a link](docs/x.md)`\n```\n[nor](this.md)\n```\n"
        f"[ok]({home}/blob/main/README.md) [web](https://dagster.io/) [top](#quick-start)\n"
        f"![UI]({home}/raw/main/docs/ui-materialisation.png)"
    )
    assert link_problems(markdown, home, ROOT) == []
