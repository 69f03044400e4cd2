"""Expectations declared on an asset and checked on its rows before they are written.

Declared in the asset's metadata under ``ubunye/expectations``, a list of rules, each with exactly
one kind::

    {"not_null": "order_id"}
    {"unique": ["order_id"], "severity": "warn"}
    {"between": {"column": "amount", "min": 0, "max": 10000}}
    {"one_of": {"column": "status", "values": ["open", "paid"]}}
    {"row_count": {"min": 1, "max": 1000000}}

``severity`` is ``fail`` (the default: the write is stopped, the previous data stays) or ``warn``
(reported only). A null passes every rule but ``not_null``; in a float column NaN counts as
missing, as null does. Every rule's result, passed or not, goes into the run record and the
materialisation metadata, in the record's entry shape: ``output, rule, kind, severity, column,
failed, total, passed``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol

from pydantic import ValidationError, field_validator, model_validator

from ubunye_dagster.receipts.metadata import EXPECTATIONS as EXPECTATIONS_KEY
from ubunye_dagster.receipts.metadata import definition_metadata, plain
from ubunye_dagster.strict_fields import StrictFields, UnknownSettingError

RULE_KINDS = ("not_null", "unique", "between", "one_of", "row_count")


class ExpectationError(ValueError):
    """A rule that cannot be checked as declared (bad shape, unknown column, wrong column type)."""


class ExpectationFailed(Exception):
    """Rules of severity ``fail`` were broken; nothing was written."""

    def __init__(self, output: str, broken: Sequence[Mapping[str, Any]]):
        self.output = output
        self.broken = [dict(entry) for entry in broken]
        lines = "; ".join(
            f"{entry['rule']} ({entry['kind']}) broken by {entry['failed']} "
            f"of {entry['total']} rows"
            for entry in self.broken
        )
        super().__init__(
            f"{output}: expectations failed, nothing was written and the previous data is "
            f"unchanged: {lines}"
        )


class Between(StrictFields):
    """``column`` stays within ``min``..``max``, both inclusive; one bound may be omitted."""

    column: str
    min: float | None = None
    max: float | None = None

    @model_validator(mode="after")
    def _has_a_bound(self) -> Between:
        if self.min is None and self.max is None:
            raise ValueError("a 'between' rule needs 'min', 'max' or both")
        return self


class OneOf(StrictFields):
    """``column`` holds only the listed ``values``."""

    column: str
    values: list[Any]


class RowCount(StrictFields):
    """The output has between ``min`` and ``max`` rows, both inclusive; either may be omitted."""

    min: int | None = None
    max: int | None = None

    def excludes(self, total: int) -> bool:
        """True when ``total`` rows fall below ``min`` or above ``max``."""
        return (self.min is not None and total < self.min) or (
            self.max is not None and total > self.max
        )


class Rule(StrictFields):
    """One declared expectation: exactly one kind, a severity, and a name that defaults to the
    columns it reads joined with its kind (``order_id_unique``), or the kind alone."""

    name: str = ""
    severity: Literal["fail", "warn"] = "fail"
    not_null: str | None = None
    unique: list[str] | None = None
    between: Between | None = None
    one_of: OneOf | None = None
    row_count: RowCount | None = None

    @field_validator("unique", mode="before")
    @classmethod
    def _one_column_as_a_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_kind_and_a_name(self) -> Rule:
        declared = [kind for kind in RULE_KINDS if getattr(self, kind) is not None]
        if len(declared) != 1:
            raise ValueError(
                f"a rule sets exactly one of the kinds {', '.join(RULE_KINDS)}; "
                f"this one sets {', '.join(declared) or 'none'}"
            )
        if self.unique == []:
            raise ValueError("a 'unique' rule names at least one column")
        if not self.name:
            self.name = "_".join([*self.columns, self.kind])
        return self

    @property
    def kind(self) -> str:
        """The one rule kind this rule sets."""
        return next(kind for kind in RULE_KINDS if getattr(self, kind) is not None)

    @property
    def columns(self) -> list[str]:
        """The columns the rule reads, in order; none for ``row_count``."""
        spec = getattr(self, self.kind)
        if isinstance(spec, str):
            return [spec]
        if isinstance(spec, list):
            return list(spec)
        return [spec.column] if isinstance(spec, (Between, OneOf)) else []

    @property
    def column(self) -> str | None:
        """The record entry's ``column``: ``a``, or ``a, b`` for several; None for row_count."""
        return ", ".join(self.columns) or None


def parse_rules(declared: Any, *, where: str = EXPECTATIONS_KEY) -> list[Rule]:
    """Rules from asset metadata (a list of mappings, possibly wrapped in a JSON metadata value)."""
    if declared is None:
        return []
    declared = plain(declared)  # a dg.MetadataValue.json(...) wrapper
    if (
        isinstance(declared, Mapping)
        or not isinstance(declared, Sequence)
        or isinstance(declared, str)
    ):
        hint = f"; write [{declared!r}]" if isinstance(declared, Mapping) else ""
        raise ExpectationError(
            f"{where} is a list of rules, not {type(declared).__name__} ({declared!r}){hint}"
        )
    rules = []
    for position, entry in enumerate(declared):
        _refuse_unknown_keys(entry, f"{where}[{position}] {entry!r}")
        try:
            rules.append(Rule.model_validate(entry))
        except (ValidationError, UnknownSettingError) as exc:
            raise ExpectationError(
                f"{where}[{position}] {entry!r} is not a valid rule: {_problems(exc)}"
            ) from None
    names = [rule.name for rule in rules]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ExpectationError(f"{where}: rule names must differ; repeated: {', '.join(repeated)}")
    return rules


def _problems(exc: ValidationError | UnknownSettingError) -> str:
    """What validating a rule found: each problem at its place, or the key a part does not have."""
    if isinstance(exc, UnknownSettingError):
        return str(exc)
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'rule'}: {err['msg']}" for err in exc.errors()
    )


def validate_declared_expectations(assets: Iterable[Any]) -> None:
    """Parse the ``ubunye/expectations`` of every asset definition or spec (or of every asset of
    a ``dg.Definitions``), so a malformed rule fails when the definitions load, not after the
    asset has computed. The error names the asset and the rule."""
    for key, metadata in definition_metadata(assets):
        declared = metadata.get(EXPECTATIONS_KEY)
        if declared is not None:
            parse_rules(declared, where=f"asset {key.to_user_string()}: {EXPECTATIONS_KEY}")


def _refuse_unknown_keys(entry: Any, where: str) -> None:
    """A key that is neither a rule kind nor ``name``/``severity``: an error naming it, with the
    kind it was probably meant to be."""
    if not isinstance(entry, Mapping):
        raise ExpectationError(f"{where} is a mapping like {{'not_null': 'column'}}, not {entry!r}")
    known = list(Rule.model_fields)
    for key in entry:
        if key in known:
            continue
        close = difflib.get_close_matches(str(key), known, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ExpectationError(
            f"{where}: unknown rule kind '{key}'{hint}; a rule is one of "
            f"{', '.join(RULE_KINDS)}, with an optional name and severity"
        )


class RuleCounter(Protocol):
    """What a frame engine answers so the rules can be judged without knowing the engine."""

    def total(self) -> int:
        """Rows in the frame."""

    def column_kinds(self) -> Mapping[str, str]:
        """Each column's canonical type name (``int64``, ``float64``, ``string``, ...)."""

    def count_missing(self, column: str) -> int:
        """Rows where ``column`` is null, or NaN in a float column."""

    def count_outside(self, column: str, low: float | None, high: float | None) -> int:
        """Rows where ``column`` is below ``low`` or above ``high`` (null and NaN never count)."""

    def count_not_in(self, column: str, values: Sequence[Any]) -> int:
        """Rows where ``column`` has a value outside ``values`` (null and NaN are not counted)."""

    def count_duplicated(self, columns: Sequence[str]) -> int:
        """Rows whose values in ``columns`` are shared with at least one other row."""


_NUMERIC_PREFIXES = ("int", "uint", "float", "decimal")


def _check_columns(rule: Rule, kinds: Mapping[str, str], output: str) -> None:
    for column in rule.columns:
        if column not in kinds:
            known = ", ".join(kinds) or "none"
            raise ExpectationError(
                f"{output}: column '{column}' of rule '{rule.name}' ({rule.kind}) is not in the "
                f"output; its columns are {known}"
            )
    if rule.between is not None and not kinds[rule.between.column].startswith(_NUMERIC_PREFIXES):
        raise ExpectationError(
            f"{output}: rule '{rule.name}' (between) needs a numeric column; "
            f"'{rule.between.column}' is {kinds[rule.between.column]}"
        )


def check_rules(rules: Sequence[Rule], counter: RuleCounter, output: str) -> list[dict[str, Any]]:
    """Judge every rule; one record entry per rule, passed or not, in declaration order."""
    if not rules:
        return []
    kinds = counter.column_kinds()
    for rule in rules:
        _check_columns(rule, kinds, output)
    total = counter.total()
    results = []
    for rule in rules:
        if rule.not_null is not None:
            failed = counter.count_missing(rule.not_null)
        elif rule.unique is not None:
            failed = counter.count_duplicated(rule.unique)
        elif rule.between is not None:
            failed = counter.count_outside(rule.between.column, rule.between.min, rule.between.max)
        elif rule.one_of is not None:
            failed = counter.count_not_in(rule.one_of.column, rule.one_of.values)
        else:
            failed = int(rule.row_count.excludes(total))  # type: ignore[union-attr]
        results.append(
            {
                "output": output,
                "rule": rule.name,
                "kind": rule.kind,
                "severity": rule.severity,
                "column": rule.column,
                "failed": int(failed),
                "total": int(total),
                "passed": failed == 0,
            }
        )
    return results


def broken_fail_rules(results: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The results that stop a write: not passed, severity ``fail``."""
    return [entry for entry in results if not entry["passed"] and entry["severity"] == "fail"]


class ArrowRuleCounter:
    """Rule counts over a pyarrow Table, with pyarrow.compute (no copy of the data)."""

    def __init__(self, table: Any, column_kinds: Mapping[str, str]):
        self._table = table
        self._kinds = dict(column_kinds)

    def total(self) -> int:
        return int(self._table.num_rows)

    def column_kinds(self) -> Mapping[str, str]:
        return self._kinds

    def _column(self, name: str) -> Any:
        import pyarrow as pa

        column = self._table.column(name)
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        return column

    def _is_float(self, name: str) -> bool:
        return self._kinds.get(name, "").startswith("float")

    @staticmethod
    def _count_true(mask: Any) -> int:
        import pyarrow as pa
        import pyarrow.compute as pc

        return int(pc.sum(pc.cast(pc.fill_null(mask, False), pa.int64())).as_py() or 0)

    def count_missing(self, column: str) -> int:
        import pyarrow.compute as pc

        values = self._column(column)
        if not self._is_float(column):
            return int(values.null_count)
        return self._count_true(pc.is_null(values, nan_is_null=True))

    def count_outside(self, column: str, low: float | None, high: float | None) -> int:
        import pyarrow as pa
        import pyarrow.compute as pc

        values = self._column(column)
        if pa.types.is_decimal(values.type):
            values = values.cast(pa.float64())
        parts = []
        if low is not None:
            parts.append(pc.less(values, pa.scalar(low, pa.float64())))
        if high is not None:
            parts.append(pc.greater(values, pa.scalar(high, pa.float64())))
        mask = parts[0] if len(parts) == 1 else pc.or_(parts[0], parts[1])
        return self._count_true(mask)  # NaN compares false both ways, so it is never counted

    def count_not_in(self, column: str, values: Sequence[Any]) -> int:
        import pyarrow as pa
        import pyarrow.compute as pc

        data = self._column(column)
        try:
            allowed = pa.array(list(values), type=data.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
            raise ExpectationError(
                f"one_of on '{column}': the values {list(values)!r} are not all of the column's "
                f"type {data.type} ({exc})"
            ) from None
        outside = pc.invert(pc.is_in(data, value_set=allowed))
        present = pc.invert(pc.is_null(data, nan_is_null=self._is_float(column)))
        return self._count_true(pc.and_(outside, present))

    def count_duplicated(self, columns: Sequence[str]) -> int:
        import pyarrow as pa
        import pyarrow.compute as pc

        if self._table.num_rows == 0:
            return 0
        keys = pa.table({f"k{i}": self._column(name) for i, name in enumerate(columns)})
        groups = keys.group_by(keys.column_names).aggregate([([], "count_all")])
        counts = groups.column("count_all")
        return int(pc.sum(pc.filter(counts, pc.greater(counts, 1))).as_py() or 0)
