"""The receipt of one table computed outside the orchestrator, as a plain JSON document.

It holds the table's rows-v1 fingerprint, the inputs it was made from (hashed there, or taken from
the receipts the job was given), and the evidence of the process that made it: the code hash of
the script's folder and that process's own environment. ``ubunye_rows.pipes`` reports it through
Dagster Pipes; ubunye-dagster turns it into the asset's run record. The evidence alone (an
``ubunye-evidence/1`` document) can be reported as the job starts, before any receipt, so the
records of a job that fails early still name the process that ran it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from typing import Any

from ubunye_rows.evidence import code_hash, environment, environment_hash
from ubunye_rows.hashing import Fingerprint, fingerprint

#: The materialisation metadata key the receipt travels under.
RECEIPT_KEY = "ubunye/receipt"
#: The key of the Pipes custom message that carries the process evidence alone.
EVIDENCE_KEY = "ubunye/evidence"
#: The receipt document's format; a reader refuses any other.
RECEIPT_FORMAT = "ubunye-receipt/1"
#: The format of the process evidence a job reports on its own, before any receipt.
EVIDENCE_FORMAT = "ubunye-evidence/1"
#: Backend names as run records spell them, by the frame's top-level package.
_BACKENDS = {"pandas": "pandas", "pyarrow": "pyarrow", "polars": "polars", "pyspark": "spark"}
#: What a step taken from a receipt says about itself.
RECEIPT_NOTE = "taken from the receipt the job was given (its rows were not hashed again)"


def backend_of(frame: Any) -> str:
    """The run record's ``backend`` for a frame: pandas, pyarrow, polars or spark."""
    library = (getattr(type(frame), "__module__", "") or "").split(".")[0]
    return _BACKENDS.get(library, library)


def step_document(
    fp: Fingerprint,
    *,
    name: str,
    direction: str,
    location: str = "",
    format: str = "",
    hash_seconds: float | None = None,
) -> dict[str, Any]:
    """One run-record step (input or output) carrying ``fp``: hashes, rows, method, error, and
    the sketch when the hash kept one."""
    step: dict[str, Any] = {
        "name": name,
        "direction": direction,
        "format": format,
        "location": location,
        "row_count": fp.row_count,
        "schema_hash": fp.schema_hash,
        "data_hash": fp.data_hash,
        "hash_method": fp.method,
        "hash_error": fp.error,
        "hash_seconds": hash_seconds,
        "hash_basis": "materialised" if fp.data_hash is not None else None,
    }
    if fp.sketch is not None:
        step["sketch"] = fp.sketch.to_record()
    return step


def timed_fingerprint(frame: Any) -> tuple[Fingerprint, float]:
    """rows-v1 of ``frame`` (an honest failure when its rows cannot be read) and the seconds."""
    started = time.perf_counter()
    fp = fingerprint(frame)
    return fp, round(time.perf_counter() - started, 6)


def input_document(name: str, source: Any) -> dict[str, Any]:
    """The input step named ``name``: a frame is hashed here; a ``Fingerprint``, a receipt or a
    step document (what the job was told it read) is taken as it is."""
    if isinstance(source, Fingerprint):
        return step_document(source, name=name, direction="input")
    if isinstance(source, Mapping):
        step = source.get("output", source)
        if not isinstance(step, Mapping) or not ({"data_hash", "hash_error"} & set(step)):
            raise ValueError(
                f"input {name!r}: a mapping must be a receipt or a step with data_hash or "
                f"hash_error, not one with keys {sorted(source)}"
            )
        known = {k: v for k, v in step.items() if k not in ("name", "direction")}
        return {**known, "name": name, "direction": "input", "source_note": RECEIPT_NOTE}
    fp, seconds = timed_fingerprint(source)
    return step_document(fp, name=name, direction="input", hash_seconds=seconds)


def main_script_folder() -> str | None:
    """The folder of the script this process was started with (None in an interactive one)."""
    script = getattr(sys.modules.get("__main__"), "__file__", None)
    return os.path.dirname(os.path.abspath(script)) if script else None


def process_evidence(code_folder: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """This process's evidence: the code hash of ``code_folder`` (default the script's folder),
    the folder, the environment and its hash."""
    folder = code_folder if code_folder is not None else main_script_folder()
    env = environment()
    return {
        "code_folder": None if folder is None else str(folder),
        "code_hash": code_hash(folder),
        "environment": env,
        "environment_hash": environment_hash(env),
    }


def build_receipt(
    frame: Any,
    *,
    name: str,
    location: str = "",
    format: str = "",
    inputs: Mapping[str, Any] | None = None,
    code_folder: str | os.PathLike[str] | None = None,
    partition_key: str | None = None,
) -> dict[str, Any]:
    """The receipt of ``frame`` written to ``location``: its step, its inputs' steps, and this
    process's code hash (of ``code_folder``, default the script's folder) and environment."""
    fp, seconds = timed_fingerprint(frame)
    return {
        "format": RECEIPT_FORMAT,
        "output": step_document(
            fp,
            name=name,
            direction="output",
            location=str(location),
            format=format,
            hash_seconds=seconds,
        ),
        "inputs": [input_document(str(key), value) for key, value in (inputs or {}).items()],
        "backend": backend_of(frame),
        **process_evidence(code_folder),
        "partition_key": partition_key,
    }


def evidence_document(code_folder: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The process evidence a job reports before any receipt (``process_evidence``, with its
    format)."""
    return {"format": EVIDENCE_FORMAT, **process_evidence(code_folder)}


def check_receipt(document: Any) -> Mapping[str, Any]:
    """``document`` when it is a receipt this version reads; ValueError saying why otherwise."""
    _check_format(document, RECEIPT_FORMAT, "receipt")
    if not isinstance(document.get("output"), Mapping):
        raise ValueError("the receipt has no output step")
    if not isinstance(document.get("inputs", []), list):
        raise ValueError("the receipt's inputs are not a list")
    _check_evidence_fields(document, "receipt")
    return document


def check_evidence(document: Any) -> Mapping[str, Any]:
    """``document`` when it is process evidence this version reads; ValueError saying why
    otherwise."""
    _check_format(document, EVIDENCE_FORMAT, "process evidence")
    _check_evidence_fields(document, "process evidence")
    return document


def _check_format(document: Any, expected: str, what: str) -> None:
    if not isinstance(document, Mapping):
        raise ValueError(f"a {what} document is a JSON object, not {type(document).__name__}")
    if document.get("format") != expected:
        raise ValueError(
            f"a {what} document of format {expected!r} was expected, not {document.get('format')!r}"
        )


def _check_evidence_fields(document: Mapping[str, Any], what: str) -> None:
    """The code hash and environment hash are text or null, the environment an object."""
    for name in ("code_hash", "environment_hash"):
        if not isinstance(document.get(name), (str, type(None))):
            raise ValueError(f"the {what}'s {name} is not text")
    if not isinstance(document.get("environment", {}), (Mapping, type(None))):
        raise ValueError(f"the {what}'s environment is not an object")
