"""Settings classes that refuse a field they do not have, instead of ignoring it.

Dagster's own resources accept and drop unknown keyword arguments, so a misspelled or misplaced
setting (``UbunyeIOManager(usecase_dir=".")``) sends records somewhere the user did not ask for.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator


class UnknownSettingError(TypeError):
    """A settings class was given a field it does not have."""


def refuse_unknown_fields(
    cls: type, data: Any, *, belongs_to: Mapping[str, str] | None = None
) -> Any:
    """``data`` unchanged when every key is a field of ``cls``; else an error naming the field,
    the class, and the closest valid names. ``belongs_to`` says where a field of another class
    goes (``{"usecase_dir": "a UbunyeResource field: ..."}``)."""
    if not isinstance(data, Mapping):
        return data
    fields = list(cls.model_fields)  # type: ignore[attr-defined]
    unknown = [str(key) for key in data if key not in fields]
    if not unknown:
        return data
    problems = [_problem(cls.__name__, name, fields, belongs_to or {}) for name in unknown]
    raise UnknownSettingError(f"{'; '.join(problems)}. Its fields are {', '.join(fields)}")


def _problem(owner: str, name: str, fields: list[str], belongs_to: Mapping[str, str]) -> str:
    elsewhere = belongs_to.get(name)
    if elsewhere:
        return f"{owner} has no field '{name}': it is {elsewhere}"
    close = difflib.get_close_matches(name, fields, n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    return f"{owner} has no field '{name}'{hint}"


class StrictFields(BaseModel):
    """A model that refuses a field it does not have, naming the closest ones (``extra="forbid"``
    in its JSON schema too)."""

    model_config = ConfigDict(extra="forbid")
    #: The class whose name and fields the refusal gives: this class when None, or the class a
    #: derived model stands for (a component's YAML model names the component).
    fields_of: ClassVar[type | None] = None

    @model_validator(mode="before")
    @classmethod
    def _known_fields_only(cls, data: Any) -> Any:
        return refuse_unknown_fields(cls.fields_of or cls, data)


class StrictSettings(StrictFields):
    """Settings: a frozen ``StrictFields`` model."""

    model_config = ConfigDict(frozen=True)
