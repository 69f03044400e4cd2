"""The example's dbt project (``dbt_shop/``: two seeds and two models on DuckDB) as Dagster
assets, each build with its receipts: one line in the ``@dbt_assets`` body."""

# No `from __future__ import annotations`: Dagster reads the asset function's annotations.

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dagster as dg
from dagster_dbt import DagsterDbtTranslator, DbtCliResource, dbt_assets

from example_project.paths import PROJECT_DIR, data_dir
from ubunye_dagster import UbunyeResource
from ubunye_dagster.dbt import with_dbt_receipts

#: The dbt project as shipped; each home builds a copy of it (its target/, its DuckDB file).
DBT_PROJECT_DIR = PROJECT_DIR / "dbt_shop"
#: The group and key prefix of the dbt assets (their records: ``<usecase>/dbt_shop/...``).
DBT_GROUP = "dbt_shop"
#: What a copy leaves out: dbt's outputs and the database.
_BUILT_PATTERNS = ("target", "logs", "*.duckdb", "*.duckdb.wal", ".user.yml")
_BUILT = shutil.ignore_patterns(*_BUILT_PATTERNS)
#: dbt's saved parse, which a later command reads to parse only the files that changed.
PARTIAL_PARSE = "partial_parse.msgpack"


def dbt_working_copy(home: Path) -> Path:
    """The dbt project this home builds: a copy under ``data/``, its seeds copied only when it
    has none (the quick start changes one there; ``reset_seeds`` puts the shipped ones back)."""
    copy = (data_dir(home) / "dbt_shop").resolve()
    kept = (
        shutil.ignore_patterns("seeds", *_BUILT_PATTERNS) if (copy / "seeds").is_dir() else _BUILT
    )
    shutil.copytree(DBT_PROJECT_DIR, copy, ignore=kept, dirs_exist_ok=True)
    return copy


def reset_seeds(project_dir: Path) -> None:
    """The shipped seeds back in the copy ``project_dir``."""
    shutil.copytree(DBT_PROJECT_DIR / "seeds", project_dir / "seeds", dirs_exist_ok=True)


def dbt_executable() -> str:
    """The ``dbt`` installed beside this Python (a venv need not be on PATH), else ``dbt``."""
    beside = Path(sys.executable).with_name("dbt")
    return str(beside) if beside.exists() else "dbt"


def dbt_resource(project_dir: Path) -> DbtCliResource:
    """dbt on the project, run by :func:`dbt_executable`."""
    return DbtCliResource(
        project_dir=str(project_dir), profiles_dir=str(project_dir), dbt_executable=dbt_executable()
    )


def parsed_manifest(project_dir: Path, dbt: str | None = None) -> dict[str, Any]:
    """The project's manifest, parsed again (by the ``dbt`` executable given, else
    :func:`dbt_executable`) when a project file is newer than it. Read here, not handed over as
    a path: dagster-dbt keeps the first manifest it read from a path."""
    manifest = project_dir / "target" / "manifest.json"
    relative = (p.relative_to(project_dir) for p in project_dir.rglob("*") if p.is_file())
    # What a build writes (the warehouse file among it) is no source: a parse per build is 5 s.
    sources = [project_dir / p for p in relative if not _BUILT(str(project_dir), p.parts)]
    newest = max(p.stat().st_mtime for p in sources)
    if not manifest.exists() or manifest.stat().st_mtime < newest:
        # Parsed beside and renamed into place: processes loading the project at once (test
        # workers, a code server) each read a whole manifest, never one another's half-written.
        manifest.parent.mkdir(exist_ok=True)
        with tempfile.TemporaryDirectory(dir=manifest.parent, prefix="parse-") as target:
            parse_project(project_dir, Path(target), dbt or dbt_executable())
            # dagster-dbt hands target/'s partial parse to each build, which then parses
            # only what changed since (a full parse is a second of each build).
            os.replace(Path(target) / PARTIAL_PARSE, manifest.parent / PARTIAL_PARSE)
            os.replace(Path(target) / "manifest.json", manifest)
    return json.loads(manifest.read_text(encoding="utf-8"))


def parse_project(project_dir: Path, target: Path, dbt: str) -> None:
    """``dbt parse`` of the project into ``target`` (its manifest, its partial parse, its log) by
    the executable ``dbt``; raises with dbt's output when dbt fails. A process of its own: dbt
    imports every importable module named ``dbt_*`` of its path, which a code server's path may
    hold. Run directly: through ``DbtCliResource`` each parse would first run ``dbt --version``,
    two seconds of CPU."""
    command = [dbt, "--quiet", "--no-send-anonymous-usage-stats", "parse"]
    command += ["--project-dir", str(project_dir), "--profiles-dir", str(project_dir)]
    command += ["--target-path", str(target), "--log-path", str(target)]
    parsed = subprocess.run(command, cwd=project_dir, capture_output=True, text=True, check=False)
    if parsed.returncode != 0:
        output = (parsed.stdout + parsed.stderr).strip()[-3000:]
        raise RuntimeError(f"dbt parse of {project_dir} failed ({parsed.returncode}):\n{output}")


class ShopTranslator(DagsterDbtTranslator):
    """Every dbt node under the ``dbt_shop`` group and key prefix."""

    def get_asset_spec(self, manifest: Mapping[str, Any], unique_id: str, project: Any):
        spec = super().get_asset_spec(manifest, unique_id, project)
        return spec.replace_attributes(key=spec.key.with_prefix(DBT_GROUP), group_name=DBT_GROUP)


def build_dbt_assets(project_dir: Path) -> dg.AssetsDefinition:
    """The dbt project's models and seeds, built by ``dbt build``, each with its receipt."""

    @dbt_assets(
        manifest=parsed_manifest(project_dir),
        name=DBT_GROUP,
        dagster_dbt_translator=ShopTranslator(),
    )
    def dbt_shop(context: dg.AssetExecutionContext, dbt: DbtCliResource, ubunye: UbunyeResource):
        yield from with_dbt_receipts(
            dbt.cli(["build"], context=context), context=context, ubunye=ubunye
        )

    return dbt_shop
