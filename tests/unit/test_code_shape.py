"""The shape the code keeps: three packages importing one way (``ubunye_dagster`` ->
``ubunye_core`` -> ``ubunye_rows``), short functions, no import cycle, no call-stack reading,
and Dagster internals read in one module only."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

ROOT = Path(__file__).resolve().parents[2]
#: Each project package and the folder that holds it (``ubunye_rows`` is its own distribution).
PACKAGES = {
    "ubunye_rows": ROOT / "rows" / "ubunye_rows",
    "ubunye_core": ROOT / "ubunye_core",
    "ubunye_dagster": ROOT / "ubunye_dagster",
}
PROJECT = tuple(PACKAGES)
INTERNALS = ROOT / "ubunye_dagster" / "dagster_internals.py"


def modules() -> dict[str, Path]:
    """Every project module by dotted name."""
    found = {}
    for folder in PACKAGES.values():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder.parent).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imported_modules(path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules ``path`` imports (a name imported from a package counts as its
    submodule when it is one)."""
    imported = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names if alias.name in known}
        elif isinstance(node, ast.ImportFrom) and node.module in known:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                imported.add(sub if sub in known else node.module)
    return imported


def imported_names(node: ast.AST) -> list[str]:
    """The module names an import statement names (none for any other node)."""
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return []


def test_imports_go_one_way_from_the_glue_to_the_core_to_the_hash():
    # Any import, deferred ones included: ubunye_rows must run where only it is installed.
    may_not_import = {
        "ubunye_rows": {"ubunye_core", "ubunye_dagster", "dagster"},
        "ubunye_core": {"ubunye_dagster", "dagster"},
    }
    backwards = []
    for name, path in modules().items():
        banned = may_not_import.get(name.split(".")[0], set())
        for node in ast.walk(ast.parse(path.read_text())):
            backwards += [f"{name}: {n}" for n in imported_names(node) if n.split(".")[0] in banned]
    assert backwards == []


#: The glue's rooms, lowest first: a module imports only from its own room and the rooms below
#: it (docs/development.md explains the order). The public modules gather everything at the top.
GLUE_LAYERS = (
    "dagster_internals",
    "strict_fields",
    "receipts",
    "checks",
    "drift",
    "own_rows",
    "resource",
    "warehouse",
    "io",
    "automation",
    "dbt",
    "adoption",
    "components",
    "",
)
#: Rooms the write pipeline and the frame handlers never reach: the pipeline ends in observers
#: given to it, so a write depends on no verdict and no rule, and it reads its settings through
#: the ``PipelineSettings`` protocol, not the resource (whose recorder reaches the verdicts).
PIPELINE_MAY_NOT_IMPORT = {
    "ubunye_dagster.io.pipeline": ("drift", "checks", "resource", "own_rows"),
    "ubunye_dagster.io.handlers": ("drift", "checks", "resource", "own_rows"),
    "ubunye_dagster.io.storage": ("drift", "checks", "resource", "own_rows"),
}


def glue_room(module: str) -> str:
    """The room of a glue module: its subpackage or top-level module ('' for the package)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_glue_imports_only_from_its_own_room_and_the_rooms_below():
    rank = {room: level for level, room in enumerate(GLUE_LAYERS)}
    known = modules()
    upward = []
    for name, path in known.items():
        if not name.startswith("ubunye_dagster"):
            continue
        for target in imported_modules(path, known):
            if (
                target.startswith("ubunye_dagster")
                and rank[glue_room(target)] > rank[glue_room(name)]
            ):
                upward.append(f"{name} -> {target}")
    assert sorted(set(known_rooms(known)) - set(GLUE_LAYERS)) == []
    assert upward == []


def known_rooms(known: dict[str, Path]) -> set[str]:
    """Every room the glue has."""
    return {glue_room(name) for name in known if name.startswith("ubunye_dagster")}


def test_the_write_pipeline_and_the_handlers_import_no_verdict_and_no_rule():
    known = modules()
    reached = []
    for name, path in known.items():
        for prefix, rooms in PIPELINE_MAY_NOT_IMPORT.items():
            if name.startswith(prefix):
                reached += [
                    f"{name} -> {target}"
                    for target in imported_modules(path, known)
                    if target.startswith("ubunye_dagster") and glue_room(target) in rooms
                ]
    assert reached == []


def test_no_function_in_ubunye_dagster_is_over_50_lines():
    too_long = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1})"
        for path in (ROOT / "ubunye_dagster").rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > 50
    ]
    assert too_long == []


def test_no_project_module_imports_one_that_imports_it_back():
    known = modules()
    graph = {name: imported_modules(path, known) - {name} for name, path in known.items()}
    # A package's __init__ gathers its modules; only module-to-module edges can form a cycle.
    packages = {name for name, path in known.items() if path.name == "__init__.py"}
    cycles = []

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph[start] - packages:
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    for name in sorted(set(graph) - packages):
        if reaches(name, name, {name}):
            cycles.append(name)
    assert cycles == []


def test_no_project_module_is_imported_inside_a_function_of_the_glue():
    deferred = []
    for name, path in modules().items():
        if not name.startswith("ubunye_dagster"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for inner in ast.walk(node):
                names = imported_names(inner)
                deferred += [f"{name}: {n}" for n in names if n.split(".")[0] in PROJECT]
    assert deferred == []


def test_the_glue_never_reads_the_call_stack():
    for path in (ROOT / "ubunye_dagster").rglob("*.py"):
        text = path.read_text()
        assert "_getframe" not in text and "f_locals" not in text, path


def test_dagster_internals_are_imported_by_one_module_only():
    importers = []
    for path in (ROOT / "ubunye_dagster").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if any(n.startswith("dagster._") for n in imported_names(node)):
                importers.append(str(path.relative_to(ROOT)))
    assert sorted(set(importers)) == [str(INTERNALS.relative_to(ROOT))]


#: What a test marked ``dagster_free`` must never import, directly or through a helper module
#: of tests/ or a project package: Dagster, or what brings it in.
DAGSTER_SIDE = {"dagster", "dagster_pyspark", "dagster_dg_cli", "ubunye_dagster", "example_project"}
TESTS = ROOT / "tests"


def dagster_imports(path: Path, seen: set[Path]) -> list[str]:
    """The Dagster-side modules ``path`` imports, following the helpers of tests/ and the
    project's packages it imports."""
    found = []
    known = modules()
    for node in ast.walk(ast.parse(path.read_text())):
        for name in imported_names(node):
            top = name.split(".")[0]
            nested = known.get(name) or (TESTS / f"{top}.py")
            if top in DAGSTER_SIDE:
                found.append(f"{path.name}: {name}")
            elif nested.exists() and nested not in seen:
                seen.add(nested)
                found += dagster_imports(nested, seen)
    return found


def test_a_test_module_marked_dagster_free_imports_no_dagster():
    marked = [p for p in TESTS.rglob("test_*.py") if "pytest.mark.dagster_free" in p.read_text()]
    assert len(marked) >= 10, marked  # the marker is in use, so the check checks something
    leaks = {p.name: dagster_imports(p, {p}) for p in marked}
    assert {name: found for name, found in leaks.items() if found} == {}


def test_the_storage_notes_keys_are_spelled_out_only_in_ubunye_core():
    note = ROOT / "ubunye_core" / "materialisations" / "stored.py"
    spellings = ('"ubunye.writer"', '"ubunye.data_hash"', '"ubunye.schema_hash"', '"_ubunye.json"')
    repeated = [
        f"{path.relative_to(ROOT)}: {spelling}"
        for path in modules().values()
        if path != note
        for spelling in spellings
        if spelling in path.read_text()
    ]
    assert repeated == [], "use the keys of ubunye_core.materialisations.stored"
    assert all(spelling in note.read_text() for spelling in spellings)


#: The folders of tests/ by kind; a Spark module is under spark/ (or system/, for a cluster).
TEST_KINDS = ("unit", "dagster", "spark", "system", "docs")
SPARK_MARKED = re.compile(r"^pytestmark = .*pytest\.mark\.spark", re.MULTILINE)


def test_every_test_module_is_in_the_folder_of_its_kind():
    misplaced = [str(p.relative_to(TESTS)) for p in TESTS.glob("test_*.py")]
    misplaced += [
        str(p.relative_to(TESTS))
        for p in TESTS.rglob("test_*.py")
        if p.parent != TESTS and p.parent.name not in TEST_KINDS
    ]
    misplaced += [
        str(p.relative_to(TESTS))
        for p in TESTS.rglob("test_*.py")
        if SPARK_MARKED.search(p.read_text()) and p.parent.name not in ("spark", "system")
    ]
    assert misplaced == []
