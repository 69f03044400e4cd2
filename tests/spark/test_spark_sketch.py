"""Sketches on Spark: one grouped job gives the Arrow path's sketch, and combine equals concat."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from local_spark import spark_frame
from sketch_tables import table_of

from ubunye_rows import fingerprint
from ubunye_rows.hashing.sketch import combine

pytestmark = pytest.mark.spark


@pytest.fixture(params=["auto", "jvm"], ids=["arrow_workers", "to_json"])
def engine(request, monkeypatch):
    """Each test runs with the lines written in Spark's Python workers and on the JVM."""
    monkeypatch.setenv("UBUNYE_SPARK_ENGINE", request.param)
    return request.param


# A few doubles only: Java 17 writes some doubles unlike the shortest form (see README).
tables = st.lists(
    st.tuples(
        st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
        st.sampled_from([None, 0.0, -1.5, 2.25, float("nan")]),
        st.one_of(st.none(), st.text(max_size=6)),
        st.one_of(st.none(), st.booleans()),
    ),
    max_size=30,
)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(values=tables)
def test_the_spark_sketch_is_the_arrow_sketch_and_sums_to_the_lanes(spark, engine, values):
    table = table_of(values)
    ours = fingerprint(spark_frame(spark, table))
    assert ours.sketch == fingerprint(table).sketch
    assert ours.sketch.data_hash() == ours.data_hash


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(first=tables, second=tables)
def test_combine_on_spark_is_the_fingerprint_of_the_union(spark, engine, first, second):
    a, b = spark_frame(spark, table_of(first)), spark_frame(spark, table_of(second))
    combined = combine([fingerprint(a), fingerprint(b)])
    whole = fingerprint(a.unionAll(b))
    assert (combined.data_hash, combined.row_count, combined.sketch) == (
        whole.data_hash,
        whole.row_count,
        whole.sketch,
    )
    assert (
        whole.data_hash
        == fingerprint(pa.concat_tables([table_of(first), table_of(second)])).data_hash
    )
