"""Rule counts over the rows a write holds: Arrow tables with pyarrow.compute, Spark DataFrames
with Spark aggregations (pyspark imported only when one is counted)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ubunye_dagster.checks.expectations import ArrowRuleCounter, RuleCounter


class RowsSeen(Protocol):
    """The rows a write holds as the rules read them (the IO pipeline's ``RowsView``)."""

    engine: str
    rows: Any
    column_kinds: Mapping[str, str]
    total: int | None


def rule_counter_of(view: RowsSeen) -> RuleCounter:
    """The counter for the view's engine (a ValueError naming an engine no counter reads)."""
    if view.engine == "arrow":
        return ArrowRuleCounter(view.rows, view.column_kinds)
    if view.engine == "spark":
        return SparkRuleCounter(view.rows, view.column_kinds, view.total)
    raise ValueError(f"no expectation rule reads rows held by {view.engine!r}")


class SparkRuleCounter:
    """Rule counts as Spark aggregations over the written files."""

    def __init__(self, df: Any, column_kinds: Mapping[str, str], total: int | None = None):
        self._df = df
        self._kinds = dict(column_kinds)
        self._total = total

    def total(self) -> int:
        if self._total is None:
            self._total = int(self._df.count())
        return self._total

    def column_kinds(self) -> Mapping[str, str]:
        return self._kinds

    def _missing(self, column: str) -> Any:
        from pyspark.sql import functions as F

        col = F.col(f"`{column}`")
        if self._kinds.get(column, "").startswith("float"):
            return col.isNull() | F.isnan(col)
        return col.isNull()

    def _count(self, condition: Any) -> int:
        from pyspark.sql import functions as F

        row = self._df.agg(F.sum(F.when(condition, 1).otherwise(0)).alias("n")).first()
        return int(row["n"] or 0)

    def count_missing(self, column: str) -> int:
        return self._count(self._missing(column))

    def count_outside(self, column: str, low: float | None, high: float | None) -> int:
        from pyspark.sql import functions as F

        col = F.col(f"`{column}`")
        parts = []
        if low is not None:
            parts.append(col < F.lit(low))
        if high is not None:
            parts.append(col > F.lit(high))
        outside = parts[0] if len(parts) == 1 else parts[0] | parts[1]
        # Spark orders NaN above every number; NaN is missing, not out of range.
        return self._count(outside & ~self._missing(column))

    def count_not_in(self, column: str, values: Sequence[Any]) -> int:
        from pyspark.sql import functions as F

        col = F.col(f"`{column}`")
        return self._count(~col.isin(list(values)) & ~self._missing(column))

    def count_duplicated(self, columns: Sequence[str]) -> int:
        from pyspark.sql import functions as F

        groups = self._df.groupBy(*[F.col(f"`{name}`") for name in columns]).count()
        row = groups.filter(F.col("count") > 1).agg(F.sum("count").alias("n")).first()
        return int(row["n"] or 0)
