"""constraints/dev.txt stays the resolved set of what the README and .ci/run install: every
requirement of both distributions and the pinned extras has a pin that meets it, the Dagster
packages pinned are of one release, and both install commands pass the file."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser as the tomli package (a dependency of Dagster)
    import tomli as tomllib

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

ROOT = Path(__file__).resolve().parents[2]
CONSTRAINTS = ROOT / "constraints" / "dev.txt"
SCRIPT = ROOT / "scripts" / "pin_constraints.py"
# The Pythons the project supports (requires-python >= 3.10), each a marker environment.
PYTHONS = ("3.10.0", "3.11.0", "3.12.0", "3.13.0")


def pin_script():
    spec = importlib.util.spec_from_file_location("pin_constraints", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pins_for(python: str) -> dict[str, Version]:
    """The version constraints/dev.txt pins for each package on Linux under ``python``."""
    environment = {"python_full_version": python, "python_version": python.rsplit(".", 1)[0]}
    environment |= {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"}
    pins: dict[str, Version] = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        requirement = Requirement(line)
        if requirement.marker and not requirement.marker.evaluate(environment):
            continue
        (pin,) = requirement.specifier
        assert pin.operator == "==", line
        name = canonicalize_name(requirement.name)
        assert name not in pins, f"{name} pinned twice for Python {python}"
        pins[name] = Version(pin.version)
    return pins


def project_requirements() -> list[Requirement]:
    """Both distributions' dependencies and every extra the constraints are compiled with."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    rows = tomllib.loads((ROOT / "rows" / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = list(pin_script().EXTRAS)
    found = [Requirement(text) for text in project["dependencies"] + rows["dependencies"]]
    while wanted:
        extra = wanted.pop()
        for text in project["optional-dependencies"][extra]:
            requirement = Requirement(text)
            if canonicalize_name(requirement.name) == "ubunye-dagster":
                wanted.extend(requirement.extras)
            else:
                found.append(requirement)
    return [r for r in found if canonicalize_name(r.name) not in {"ubunye-rows", "ubunye-dagster"}]


@pytest.mark.parametrize("python", PYTHONS)
def test_every_requirement_of_the_pinned_extras_has_a_pin_that_meets_it(python):
    pins = pins_for(python)
    environment = {"python_full_version": python, "python_version": python.rsplit(".", 1)[0]}
    unmet = [
        f"{requirement} (pinned: {pins.get(canonicalize_name(requirement.name))})"
        for requirement in project_requirements()
        if requirement.marker is None or Marker(str(requirement.marker)).evaluate(environment)
        if pins.get(canonicalize_name(requirement.name)) not in requirement.specifier
    ]
    assert unmet == [], f"run python scripts/pin_constraints.py: {unmet}"


@pytest.mark.parametrize("python", PYTHONS)
def test_the_dagster_packages_pinned_are_of_one_dagster_release(python):
    pins = pins_for(python)
    dagster = pins["dagster"]
    release = {dagster, Version(f"0.{dagster.minor + 16}.{dagster.micro}")}
    others = {
        name: str(version)
        for name, version in pins.items()
        if name.startswith(("dagster", "create-dagster")) and version not in release
    }
    assert others == {}


def test_the_readme_and_ci_install_through_the_constraints_with_pinned_extras():
    pinned = set(pin_script().EXTRAS)
    commands = {
        "README.md": (ROOT / "README.md").read_text(encoding="utf-8"),
        "docs/development.md": (ROOT / "docs" / "development.md").read_text(encoding="utf-8"),
        ".ci/run": (ROOT / ".ci" / "run").read_text(encoding="utf-8"),
    }
    for where, text in commands.items():
        installs = re.findall(
            r"-c constraints/dev\.txt[^\n]*?-e \./rows -e \"\.\[([^\]]+)\]\"", text
        )
        assert installs, f"{where} installs without -c constraints/dev.txt"
        for extras in installs:
            assert set(extras.split(",")) <= pinned, (where, extras)
