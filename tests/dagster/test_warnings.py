"""The suite turns a deprecation met by the project's own code into a failure, and the project
calls no click API that click 8.5 deprecates (it warned from ``ubunye_core/cli.py`` on every
``lineage search``)."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ubunye_core", "ubunye_dagster", "ubunye_rows")

#: click's stream getters, deprecated in click 8.5 (to be removed in 9.0).
CLICK_DEPRECATED = {"get_text_stream", "get_binary_stream"}


@pytest.mark.parametrize("package", PACKAGES)
def test_a_deprecation_warning_raised_from_project_code_is_an_error(package: str) -> None:
    with pytest.raises(DeprecationWarning, match="old API"):
        warnings.warn_explicit(
            "old API", DeprecationWarning, filename=f"{package}/x.py", lineno=1, module=package
        )


def test_a_deprecation_warning_from_a_library_stays_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match="old API"):
        warnings.warn_explicit(
            "old API", DeprecationWarning, filename="lib/x.py", lineno=1, module="somelib.x"
        )


def test_project_code_calls_no_click_api_that_click_8_5_deprecates() -> None:
    calls = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Attribute) and node.attr in CLICK_DEPRECATED:
                    calls.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.attr}")
                if isinstance(node, ast.ImportFrom) and node.module and "click" in node.module:
                    calls += [
                        f"{path.relative_to(ROOT)}: {a.name}"
                        for a in node.names
                        if a.name in CLICK_DEPRECATED
                    ]
    assert calls == []
