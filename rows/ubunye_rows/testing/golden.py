"""The golden vectors of rows-v1: tables and the digests the reference gave them
(``golden_rows_v1.json`` beside this module, made by ``scripts/make_golden_vectors.py``). Read
without pytest: the conformance suite tests engines with them, and an in-database hash proves
itself on them at run time (``ubunye_rows.sql.self_check``)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

GOLDEN_FILE = "golden_rows_v1.json"


@dataclass(frozen=True)
class GoldenVector:
    """One table and the fingerprint the reference gave it."""

    name: str
    about: str
    engines: tuple[str, ...]
    arrow_ipc_base64: str
    schema_hash: str
    data_hash: str
    row_count: int
    #: What gave the digest: the reference, or Spark's ``to_json`` where rows-v1 follows Spark.
    digest_by: str = "ubunye-engine 0.8.0"

    def table(self) -> Any:
        """The vector's table, exactly as it was stored (types and chunks)."""
        import pyarrow as pa

        reader = pa.ipc.open_stream(base64.b64decode(self.arrow_ipc_base64))
        return reader.read_all()


@lru_cache(maxsize=1)
def golden_vectors() -> tuple[GoldenVector, ...]:
    """Every committed golden vector."""
    text = resources.files("ubunye_rows.testing").joinpath(GOLDEN_FILE).read_text("utf-8")
    document = json.loads(text)
    if document.get("method") != "rows-v1":
        raise ValueError(f"{GOLDEN_FILE} holds vectors for {document.get('method')!r}, not rows-v1")
    return tuple(
        GoldenVector(
            name=v["name"],
            about=v["about"],
            engines=tuple(v["engines"]),
            arrow_ipc_base64=v["arrow_ipc_base64"],
            schema_hash=v["schema_hash"],
            data_hash=v["data_hash"],
            row_count=int(v["row_count"]),
            digest_by=v.get("digest_by", "ubunye-engine 0.8.0"),
        )
        for v in document["vectors"]
    )


def vectors_for(engine: str) -> list[GoldenVector]:
    """The golden vectors whose tables ``engine`` can hold without loss."""
    return [v for v in golden_vectors() if engine in v.engines]
