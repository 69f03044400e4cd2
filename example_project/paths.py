"""Where the example keeps its data and its run records (one folder, overridable for tests)."""

from __future__ import annotations

import os
from pathlib import Path

#: The package folder; the default home of the example's data and records.
PROJECT_DIR = Path(__file__).resolve().parent
#: The CSV files shipped with the repo (generated once by seed_data/generate.py).
SEED_DIR = PROJECT_DIR / "seed_data"
#: The example's OpenLineage configuration: a file transport beside the run records.
OPENLINEAGE_CONFIG = PROJECT_DIR / "openlineage.yml"
#: Set this to keep data and records elsewhere (the tests and the UI script do).
HOME_ENV = "UBUNYE_EXAMPLE_HOME"


def example_home() -> Path:
    """The folder holding `data/` and `.ubunye/`: $UBUNYE_EXAMPLE_HOME, else the package folder."""
    configured = os.environ.get(HOME_ENV)
    return Path(configured).resolve() if configured else PROJECT_DIR


def data_dir(home: Path) -> Path:
    """Where the IO manager writes the assets' Parquet files."""
    return home / "data"
