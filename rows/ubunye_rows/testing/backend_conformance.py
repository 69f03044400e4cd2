"""A pytest suite any frame engine subclasses to prove it gives the reference's rows-v1 digests.

The golden vectors (``golden_rows_v1.json`` beside this module) are tables and the
digests the reference implementation (ubunye-engine 0.8.0) gave them, or Spark's ``to_json``
where rows-v1 follows Spark (each vector's ``digest_by``), made once by
``scripts/make_golden_vectors.py``. Each vector names the engines that can hold its
table without changing a value or a type name; a subclass runs the vectors of its
engine::

    import pyarrow as pa
    from ubunye_rows.testing.backend_conformance import RowsV1Conformance

    class TestMyEngine(RowsV1Conformance):
        engine = "myengine"          # or one of "arrow", "pandas", "polars", "spark"

        def to_frame(self, table: pa.Table):
            return my_engine.from_arrow(table)
"""

from __future__ import annotations

from typing import Any, ClassVar

try:
    import pytest  # noqa: F401
except ImportError as exc:  # pragma: no cover - the suite is made of pytest tests
    raise ImportError(
        "ubunye_rows.testing.backend_conformance is a pytest suite; install pytest to use it"
    ) from exc

from ubunye_rows.hashing.digest import Fingerprint
from ubunye_rows.testing.golden import (  # noqa: F401  (the suite's public names)
    GOLDEN_FILE,
    GoldenVector,
    golden_vectors,
    vectors_for,
)


class RowsV1Conformance:
    """Subclass it, set ``engine`` and implement ``to_frame``; each vector becomes one test, and
    the engine's null and NaN of one column must give two digests."""

    #: Which vectors apply: the name listed in each vector's ``engines``.
    engine: ClassVar[str] = ""

    def to_frame(self, table: Any) -> Any:
        """The engine's frame holding exactly the rows and types of an Arrow table. Override it."""
        raise NotImplementedError("implement to_frame(self, table) in your conformance subclass")

    def fingerprint(self, frame: Any) -> Fingerprint:
        """The engine's rows-v1 fingerprint of a frame; ubunye_rows' unless overridden."""
        from ubunye_rows import fingerprint

        return fingerprint(frame)

    def pytest_generate_tests(self, metafunc: Any) -> None:
        if "golden" in metafunc.fixturenames:
            chosen = vectors_for(type(self).engine)
            metafunc.parametrize("golden", chosen, ids=[v.name for v in chosen])

    def test_the_engine_is_named(self) -> None:
        assert type(self).engine, "set the class attribute `engine` (e.g. 'pandas')"
        assert vectors_for(type(self).engine), f"no golden vector lists {type(self).engine!r}"

    def test_null_is_not_nan(self) -> None:
        import pyarrow as pa

        with_null = self.fingerprint(self.to_frame(pa.table({"x": pa.array([1.0, None])})))
        with_nan = self.fingerprint(self.to_frame(pa.table({"x": pa.array([1.0, float("nan")])})))
        assert (with_null.error, with_nan.error) == (None, None)
        assert with_null.data_hash != with_nan.data_hash

    def test_golden_vector_gives_the_reference_digest(self, golden: GoldenVector) -> None:
        frame = self.to_frame(golden.table())
        got = self.fingerprint(frame)
        assert got.error is None, f"{golden.name}: the hash failed: {got.error}"
        assert got.row_count == golden.row_count, f"{golden.name}: row count"
        assert got.schema_hash == golden.schema_hash, f"{golden.name}: schema hash"
        assert got.data_hash == golden.data_hash, f"{golden.name}: data hash"
