"""Where run records go and how a step's inputs are treated: each field with its default, its
check and its description declared once.

``RecordLocation`` (the usecase folder or the lineage folder itself, and the usecase) is what the
dbt component takes; ``RecordSettings`` adds how records are stored and how inputs are read and
hashed. ``UbunyeResource`` and ``ReceiptSettings`` are ``RecordSettings``; the dbt component's
attributes are ``RecordLocation``'s fields (:func:`location_dataclass`), checked by it.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Annotated, Any, Literal

import dagster as dg
from pydantic import Field, field_validator

from ubunye_core.store import LineageStore
from ubunye_dagster.receipts.identity import DEFAULT_USECASE, check_usecase
from ubunye_dagster.strict_fields import StrictSettings


class RecordLocation(StrictSettings):
    """Where run records go: ``<usecase_dir>/.ubunye/lineage`` (or ``lineage_dir``), under
    ``usecase``."""

    usecase_dir: str = Field(
        default=".",
        description="Folder (or fsspec URL) whose .ubunye/lineage holds the run records; a "
        "relative path is taken from the run's working directory.",
    )
    lineage_dir: str | None = Field(
        default=None,
        description="The lineage folder itself, instead of <usecase_dir>/.ubunye/lineage.",
    )
    usecase: str = Field(
        default=DEFAULT_USECASE, description="The usecase records are filed under."
    )

    @field_validator("usecase")
    @classmethod
    def _safe_usecase(cls, value: str) -> str:
        return check_usecase(value)


class RecordSettings(RecordLocation):
    """Where run records go, how they are stored, and how a step's inputs are read and hashed."""

    hash_inputs: bool = Field(
        default=True,
        description="Hash every input as it is loaded (one more pass over each input). Off: "
        "inputs are recorded without hash or row count, and reads are not verified.",
    )
    verify_reads: Literal["fail", "warn", "off", "rows"] = Field(
        default="fail",
        description="What a loaded input whose digest differs from the one recorded when it was "
        "written does: fail the step, warn, or nothing. With fail, warn and off, an input whose "
        "stored bytes still hash to the byte digest recorded with it takes the recorded digest "
        "without hashing its rows; rows: always hash the rows, and fail on a difference.",
    )
    code_folder: str | None = Field(
        default=None,
        description="Folder (or .py file) hashed into code_hash for every asset; default: the "
        "folder of the module defining the asset (asset metadata ubunye/code_folder wins).",
    )
    # A plain default, not default_factory: Dagster 1.10's component model merges a field's own
    # default into it, which pydantic refuses beside a default_factory.
    storage_options: dict[str, Any] = Field(
        default={},
        description="fsspec options for a lineage folder on object storage (credentials, "
        "endpoint); where data and records are adopted together, for the data's base_path too.",
    )
    durable_records: bool = Field(
        default=False,
        description="Flush each local record file and its folder to disk (fsync) before it "
        "counts as saved, so records survive a power loss. Off, a record is still written whole "
        "or not at all (a temporary file renamed into place); on costs two disk flushes a save.",
    )

    def store(self) -> LineageStore:
        """The lineage store records are saved in (a store without options made once for each
        folder, durability and working directory: a relative folder is taken from the latter)."""
        if self.storage_options:
            return _new_store(
                self.lineage_dir, self.usecase_dir, self.storage_options, self.durable_records
            )
        return _store_without_options(
            self.lineage_dir, self.usecase_dir, self.durable_records, os.getcwd()
        )


def _new_store(
    lineage_dir: str | None, usecase_dir: str, options: dict[str, Any], durable: bool
) -> LineageStore:
    """A store in ``lineage_dir``, else in ``usecase_dir``'s lineage folder, reached with
    ``options``."""
    from upath import UPath

    if lineage_dir:
        return LineageStore(UPath(lineage_dir, **options), durable=durable)
    return LineageStore.for_usecase_dir(UPath(usecase_dir, **options), durable=durable)


@functools.lru_cache(maxsize=16)
def _store_without_options(
    lineage_dir: str | None, usecase_dir: str, durable: bool, working_dir: str
) -> LineageStore:
    """The store of these settings, made in ``working_dir`` (the current one: the key)."""
    return _new_store(lineage_dir, usecase_dir, {}, durable)


def location_dataclass() -> type:
    """A dataclass whose keyword-only fields are ``RecordLocation``'s, with its defaults and
    descriptions: the attributes of a component declared as a dataclass (Dagster reads a
    component's attributes from its fields)."""
    fields = [
        (
            name,
            Annotated[info.annotation, dg.Resolver.default(description=info.description)],
            dataclasses.field(default=info.default, kw_only=True),
        )
        for name, info in RecordLocation.model_fields.items()
    ]
    return dataclasses.make_dataclass("RecordLocationAttributes", fields)
