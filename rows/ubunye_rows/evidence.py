"""Evidence beside the data: a hash of the task's code and the machine's description (ADR 006).

Both are computed exactly as the reference defines them: the same task folder gets the same
``code_hash`` from either tool, and the same environment description the same ``environment_hash``
(this package lists a few more packages, so the descriptions themselves differ under Dagster).
"""

from __future__ import annotations

import copy
import hashlib
import importlib.metadata
import json
import platform
import sys
from os import PathLike
from pathlib import Path
from typing import Any

#: The reference's list of packages that can change a result, then the ones a Dagster run adds.
RESULT_PACKAGES: tuple[str, ...] = (
    "ubunye-engine",
    "pyspark",
    "delta-spark",
    "pandas",
    "pyarrow",
    "numpy",
    "narwhals",
    "scikit-learn",
    "torch",
    "mlflow",
    "ubunye-rows",
    "ubunye-dagster",
    "dagster",
    "dagster-pyspark",
    "polars",
)

#: Code hashes computed in this process: folder and file names -> (the files' signatures, hash).
_CODE_HASHES: dict[tuple[str, ...], tuple[tuple[tuple[int, int, int, int], ...], str]] = {}
#: This process's environment, looked up on first use.
_ENVIRONMENT: list[dict[str, Any]] = []


def _python_files(folder: Path) -> list[Path]:
    """Every ``.py`` file under ``folder``, cache and hidden parts left out, in path-parts order."""
    found = []
    for path in folder.rglob("*.py"):
        relative = path.relative_to(folder)
        if "__pycache__" in relative.parts:
            continue
        if any(part.startswith(".") for part in relative.parts):
            continue
        if path.is_file():
            found.append(relative)
    # Sorted by path components (what sorting pathlib paths does), not by the joined text:
    # "a/b.py" comes before "a-b.py" here, as it does for the reference.
    return sorted(found, key=lambda rel: rel.parts)


def code_hash(folder: str | PathLike[str] | None) -> str | None:
    """``sha256:<hex>`` of the task folder's Python files, or None when there are none to hash.

    Per file: its POSIX path relative to the folder and a NUL, then its bytes with CRLF made LF and
    a NUL. A single ``.py`` file is hashed as if it were the only file in its folder. The files
    are read again only when one of them was added, removed or written since the last call in
    this process (its size, modification or change time, or inode differ).
    """
    if folder is None or str(folder) == "":
        return None
    root = Path(folder)
    if root.is_file() and root.suffix == ".py":
        root, files = root.parent, [Path(root.name)]
    elif root.is_dir():
        files = _python_files(root)
    else:
        return None
    if not files:
        return None
    key = (str(root.resolve()), *(relative.as_posix() for relative in files))
    signature = tuple(_file_signature(root / relative) for relative in files)
    known = _CODE_HASHES.get(key)
    if known is not None and known[0] == signature:
        return known[1]
    digest = hashlib.sha256()
    for relative in files:
        digest.update(relative.as_posix().encode("utf-8") + b"\0")
        digest.update((root / relative).read_bytes().replace(b"\r\n", b"\n") + b"\0")
    found = "sha256:" + digest.hexdigest()
    _CODE_HASHES[key] = (signature, found)
    return found


def _file_signature(path: Path) -> tuple[int, int, int, int]:
    """What changes when a file is written: size, modification and change times, inode (the
    change time moves on every write and no tool sets it back)."""
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino


def _installed_versions(names: tuple[str, ...]) -> dict[str, str]:
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def environment() -> dict[str, Any]:
    """Python version and implementation, ``sys.platform``, machine, installed result packages.

    Looked up once per process (none of it changes under a running process); each call gets a
    copy of its own.
    """
    if not _ENVIRONMENT:
        _ENVIRONMENT.append(
            {
                "python": platform.python_version(),
                "implementation": platform.python_implementation(),
                "platform": sys.platform,
                "machine": platform.machine(),
                "packages": _installed_versions(RESULT_PACKAGES),
            }
        )
    return copy.deepcopy(_ENVIRONMENT[0])


def environment_hash(env: dict[str, Any]) -> str:
    """``sha256:<hex>`` of the environment as compact JSON with sorted keys."""
    text = json.dumps(env, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
