"""The ``dg`` component: receipts for every asset of a components project, from one ``defs.yaml``.

Registered through the ``dagster_dg_cli.registry_modules`` entry point, so ``dg list components``
shows ``ubunye_dagster.components.UbunyeReceipts`` and
``dg scaffold defs ubunye_dagster.components.UbunyeReceipts receipts`` writes its ``defs.yaml``.

A component cannot wrap or hook assets that other components define (the definitions of all
``defs/`` folders are merged after each is built), but it can build them:
``ComponentLoadContext.build_defs`` returns another folder's definitions, cached, so the project
builds each once. The component reads them to declare the checks of their assets, and remembers
their definitions so the IO manager's teardown records a step that fails before it touches it.
"""

from __future__ import annotations

import contextlib
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

import dagster as dg
from pydantic import BaseModel, Field, WithJsonSchema, create_model
from pydantic.fields import FieldInfo

from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.adoption.with_ubunye import (
    DEFAULT_IO_MANAGER_KEY,
    RESOURCE_KEY,
    ReceiptSettings,
    stored_by_default,
)
from ubunye_dagster.automation.adopt import component_sources
from ubunye_dagster.receipts.early_failures import watch_early_failures
from ubunye_dagster.strict_fields import StrictFields

# `dg list components` lists every component type of this module: the dbt one too when the dbt
# extra is installed (a registry module of its own would stop dg where dagster-dbt is missing).
with contextlib.suppress(ImportError):
    from ubunye_dagster.dbt.component import UbunyeDbtProjectComponent  # noqa: F401

#: Entries of a defs folder that are never definitions.
_NOT_DEFINITIONS = ("__init__.py", "__pycache__")


def other_definitions(context: dg.ComponentLoadContext) -> dg.Definitions:
    """The merged definitions of every other component of the project: each entry of the defs
    folder, except the path to this component, where its siblings are taken instead."""
    own = Path(context.path).resolve()
    found: list[dg.Definitions] = []
    folders = [Path(context.defs_module_path).resolve()]
    while folders:
        for entry in sorted(folders.pop().iterdir()):
            if entry.name in _NOT_DEFINITIONS or entry.name.startswith((".", "_")):
                continue
            if entry == own:
                continue
            if entry.is_dir() and own.is_relative_to(entry):
                folders.append(entry)  # the folder holding this component: its other entries
            elif entry.is_dir() or entry.suffix == ".py":
                found.append(internals.defs_of_entry(context, entry))
    return dg.Definitions.merge(*found)


def _strict_model(component: type[Any], derived: type[BaseModel]) -> type[BaseModel]:
    """The component's YAML model: unknown attributes refused (``additionalProperties: false`` in
    its JSON schema, so ``dg check yaml`` names one; when loading, with the closest valid name),
    each choice (a ``Literal`` or ``Enum`` field) its values only, so ``dg check yaml`` lists
    them, and each optional settings object checked field by field. Dagster's derived model lets
    every field also be a string, for ``{{ }}`` templates: these are written out instead."""

    class Attributes(derived, StrictFields):  # type: ignore[misc, valid-type]
        fields_of = component

    strict = {
        name: (annotation, derived.model_fields[name])
        for name, field in component.model_fields.items()
        if name in derived.model_fields and (annotation := _strict_annotation(field))
    }
    return create_model(derived.__name__, __base__=Attributes, **strict)


def _strict_annotation(field: FieldInfo) -> Any:
    """A choice's type as it is; an optional settings model with one schema for the object or
    null (an ``anyOf`` of them would make ``dg check yaml`` say only that neither matched); else
    None (the derived field stays)."""
    annotation = field.annotation
    if get_origin(annotation) is Literal:
        return annotation
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return annotation
    members = [arg for arg in get_args(annotation) if arg is not type(None)]
    if len(members) == 1 and len(get_args(annotation)) == 2:
        [model] = members
        if isinstance(model, type) and issubclass(model, BaseModel):
            schema = model.model_json_schema()
            if "$defs" not in schema:  # a self-contained schema can stand in for the union
                schema["type"] = ["object", "null"]
                schema["description"] = field.description or schema.get("description")
                return Annotated[annotation, WithJsonSchema(schema)]
    return None


class UbunyeReceipts(dg.Component, dg.Resolvable, ReceiptSettings):
    """Receipts for every asset of the project stored through the default IO manager: records on
    disk, metadata, data versions, verified reads and early-failure records; the drift sensor,
    the reproducibility checks and the expectation checks; and the sources ``observe`` names,
    observed by their rows. Attributes: ``ReceiptSettings`` and ``observe``."""

    # A plain default, not default_factory (see ReceiptSettings.storage_options).
    observe: dict[str, dict[str, Any]] = Field(
        default={},
        description="Sources observed by their rows: asset key (a/b) -> where its rows are "
        "(path and storage_options; table and warehouse; spark_table), and cron.",
    )

    @classmethod
    def model(cls) -> type[BaseModel]:
        derived = super().model()
        cached = cls.__dict__.get("_strict_attributes")
        if cached is None or not issubclass(cached, derived):
            cached = _strict_model(cls, derived)
            cls._strict_attributes = cached  # type: ignore[attr-defined]
        return cached

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        """The IO manager under the default key (its ``UbunyeResource`` under ``ubunye`` unless
        another component gives one), the sensor and the checks of the project."""
        others = other_definitions(context)
        assets = list(others.assets or [])
        manager = self.io_manager()
        watch_early_failures(
            stored_by_default(assets),
            place_settings=manager.resource.model_dump_json(),
            io_manager_key=DEFAULT_IO_MANAGER_KEY,
        )
        resources: dict[str, Any] = {DEFAULT_IO_MANAGER_KEY: manager}
        if RESOURCE_KEY not in (others.resources or {}):
            resources[RESOURCE_KEY] = manager.resource
        sources = component_sources(assets, self.observe)
        return dg.Definitions.merge(
            self.companions(assets, existing=others),
            dg.Definitions(assets=sources, resources=resources),
        )
