"""UbunyeIOManager with Spark: the same digest as pandas, atomic folder writes, the transform run
once, and the session of a dagster-pyspark PySparkResource."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import dagster as dg
import pandas as pd
import pyarrow as pa
import pytest
from dagster_pyspark import PySparkResource

from ubunye_core.store import LineageStore
from ubunye_dagster import UbunyeIOManager, UbunyeResource

pytestmark = pytest.mark.spark

TABLE = pa.table(
    {
        "id": pa.array([1, 2, 3, 4], pa.int64()),
        "name": ["ana", None, "çé", "d\n"],
        # No null or NaN in the float column: a pandas float column cannot tell them apart
        # (rows-v1 reads a pandas NaN as missing, as the reference does).
        "score": [1.5, 0.25, 2.0, -0.0],
        "day": pa.array([dt.date(2024, 1, 1), None, dt.date(2024, 2, 29), dt.date(1969, 12, 31)]),
        "at": pa.array(
            [
                dt.datetime(2024, 3, 10, 2, 30, tzinfo=dt.timezone.utc),
                None,
                dt.datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.timezone.utc),
                dt.datetime(2024, 11, 3, 1, 30, tzinfo=dt.timezone.utc),
            ],
            pa.timestamp("us", tz="UTC"),
        ),
    }
)


def resources(root: Path, spark_config: dict, **extra) -> dict:
    manager = UbunyeIOManager(
        base_path=str(root / "data"),
        ubunye=UbunyeResource(usecase_dir=str(root)),
        **{k: v for k, v in extra.items() if k == "spark_resource_key"},
    )
    key = extra.get("spark_resource_key", "pyspark")
    return {
        "io_manager": manager,
        key: extra.get("resource", PySparkResource(spark_config=spark_config)),
    }


def record_of(root: Path, task: str, run_id: str):
    return LineageStore.for_usecase_dir(root).load(f"dagster/default/{task}", run_id)


def verified_read(root: Path, run_id: str, writer: str, reader: str):
    """``writer``'s output in run ``run_id`` and ``reader``'s record, whose one input is that
    output, its digest verified against the writer's."""
    written = record_of(root, writer, run_id).outputs[0]
    record = record_of(root, reader, run_id)
    [read] = record.inputs
    assert read.data_hash == written.data_hash
    assert read.source_note.startswith("verified")
    return written, record


@dg.asset
def pandas_people() -> pd.DataFrame:
    return TABLE.to_pandas()


@dg.asset
def spark_people(pyspark: PySparkResource):
    return pyspark.spark_session.createDataFrame(TABLE)


def test_a_pandas_asset_and_a_spark_asset_with_the_same_rows_share_a_digest(
    tmp_path, spark, spark_config
):
    result = dg.materialize(
        [pandas_people, spark_people], resources=resources(tmp_path, spark_config)
    )

    from_pandas = record_of(tmp_path, "pandas_people", result.run_id).outputs[0]
    from_spark = record_of(tmp_path, "spark_people", result.run_id)
    assert from_spark.backend == "spark"
    assert from_spark.outputs[0].data_hash == from_pandas.data_hash
    assert from_spark.outputs[0].row_count == 4
    assert (tmp_path / "data" / "spark_people.parquet" / "_SUCCESS").is_file()


def test_a_spark_input_is_hashed_and_verified_against_the_writer(tmp_path, spark, spark_config):
    from pyspark.sql import DataFrame

    @dg.asset(ins={"pandas_people": dg.AssetIn(dagster_type=DataFrame)})
    def spark_reader(pyspark: PySparkResource, pandas_people):
        return pandas_people.filter("id > 1")

    result = dg.materialize(
        [pandas_people, spark_reader], resources=resources(tmp_path, spark_config)
    )

    record = verified_read(tmp_path, result.run_id, "pandas_people", "spark_reader")[1]
    assert record.inputs[0].hash_basis == "recomputed"
    assert record.outputs[0].row_count == 3


#: The file the UDF appends one line to per call: Python workers can reach it under a classic
#: session and a Spark Connect server alike (an accumulator needs a classic SparkContext).
CALLS = {"log": None}


@dg.asset
def counted(pyspark: PySparkResource):
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    session = pyspark.spark_session
    log = CALLS["log"]

    def times_ten(value):
        with open(log, "a", encoding="utf-8") as calls:
            calls.write(f"{value}\n")
        return value * 10

    frame = session.createDataFrame(TABLE.select(["id"]))
    return frame.withColumn("big", F.udf(times_ten, LongType())("id"))


def test_the_spark_output_is_hashed_from_the_written_files_so_the_transform_runs_once(
    tmp_path, spark, spark_config
):
    CALLS["log"] = str(tmp_path / "udf-calls.txt")
    result = dg.materialize([counted], resources=resources(tmp_path, spark_config))

    calls = Path(CALLS["log"]).read_text(encoding="utf-8").split()
    assert sorted(calls) == ["1", "2", "3", "4"]  # one call per row: the write; not the hash
    output = record_of(tmp_path, "counted", result.run_id).outputs[0]
    assert output.row_count == 4 and output.hash_basis == "materialised"


FAIL = {"now": False}


@dg.asset
def flaky(pyspark: PySparkResource):
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    broken = FAIL["now"]

    def maybe_fail(value):
        if broken and value == 3:
            raise ValueError("row 3 is poisoned")
        return value

    frame = pyspark.spark_session.createDataFrame(TABLE.select(["id"]))
    return frame.withColumn("checked", F.udf(maybe_fail, LongType())("id"))


def test_a_failed_spark_write_leaves_the_previous_materialisation_readable(
    tmp_path, spark, spark_config
):
    FAIL["now"] = False
    assert dg.materialize([flaky], resources=resources(tmp_path, spark_config)).success
    target = tmp_path / "data" / "flaky.parquet"
    before = sorted(spark.read.parquet(str(target)).toArrow().column("id").to_pylist())

    FAIL["now"] = True
    result = dg.materialize(
        [flaky], resources=resources(tmp_path, spark_config), raise_on_error=False
    )

    assert not result.success
    after = sorted(spark.read.parquet(str(target)).toArrow().column("id").to_pylist())
    assert after == before == [1, 2, 3, 4]
    assert os.listdir(target.parent) == ["flaky.parquet"]  # no temporary folder left behind
    latest = LineageStore.for_usecase_dir(tmp_path).list_runs("dagster/default/flaky")[0]
    assert latest.status == "error" and "poisoned" in latest.error


def test_spark_stages_under_a_name_it_reads_inside_a_folder_readers_of_the_parent_skip(
    tmp_path, spark
):
    import pyarrow.dataset as ds
    from upath import UPath

    from ubunye_dagster.io.handlers.pyspark import SparkStagedWrite

    target = UPath(str(tmp_path / "people.parquet"))
    staged = SparkStagedWrite(spark.createDataFrame(TABLE), target)

    # Spark ignores a path whose own name starts with "." or "_"; the staged name does not.
    assert not staged.staged.name.startswith((".", "_"))
    assert staged.staging.name.startswith(".") and staged.staged.parent == staged.staging
    assert ds.dataset(str(tmp_path), format="parquet").count_rows() == 0
    assert staged.rows.fingerprint().row_count == TABLE.num_rows

    staged.commit({"ubunye.writer": "spark"})
    assert os.listdir(tmp_path) == ["people.parquet"]
    assert spark.read.parquet(str(target)).count() == TABLE.num_rows


def test_a_discarded_spark_write_leaves_nothing_beside_the_target(tmp_path, spark):
    from upath import UPath

    from ubunye_dagster.io.handlers.pyspark import SparkStagedWrite

    staged = SparkStagedWrite(spark.createDataFrame(TABLE), UPath(str(tmp_path / "p.parquet")))
    staged.discard()
    assert os.listdir(tmp_path) == []


@dg.asset(metadata={"ubunye/expectations": [{"between": {"column": "score", "max": 1.0}}]})
def scored(pyspark: PySparkResource):
    return pyspark.spark_session.createDataFrame(TABLE.select(["id", "score"]))


def test_spark_expectations_are_checked_on_the_written_rows_before_they_are_put_in_place(
    tmp_path, spark, spark_config
):
    result = dg.materialize(
        [scored], resources=resources(tmp_path, spark_config), raise_on_error=False
    )

    assert not result.success  # 1.5 and 2.0 are above 1.0
    [record] = LineageStore.for_usecase_dir(tmp_path).list_runs("dagster/default/scored")
    [entry] = record.expectations
    assert (entry["failed"], entry["total"], entry["passed"]) == (2, 4, False)
    assert not (tmp_path / "data" / "scored.parquet").exists()
    assert os.listdir(tmp_path / "data") == []


class CountingPySpark(PySparkResource):
    """A PySparkResource that counts who asks for its session."""

    def count(self) -> int:
        return SESSION_ASKED["n"]

    @property
    def spark_session(self):
        SESSION_ASKED["n"] += 1
        return super().spark_session


SESSION_ASKED = {"n": 0}


def test_spark_inputs_are_read_with_the_session_of_the_configured_pyspark_resource(
    tmp_path, spark, spark_config
):
    from pyspark.sql import DataFrame

    @dg.asset
    def made(spark_here: CountingPySpark):
        return spark.createDataFrame(TABLE.select(["id"]))

    @dg.asset(ins={"made": dg.AssetIn(dagster_type=DataFrame)})
    def used(spark_here: CountingPySpark, made):
        SESSION_ASKED["seen_in_asset"] = made.sparkSession
        return made

    SESSION_ASKED["n"] = 0
    result = dg.materialize(
        [made, used],
        resources=resources(
            tmp_path,
            spark_config,
            spark_resource_key="spark_here",
            resource=CountingPySpark(spark_config=spark_config),
        ),
    )

    assert result.success
    assert SESSION_ASKED["n"] >= 1  # the assets never ask: the IO manager did
    assert SESSION_ASKED["seen_in_asset"] is spark


@dg.asset
def people_in_pandas(spark_people: pd.DataFrame) -> pd.DataFrame:
    return spark_people


def test_a_spark_asset_loads_into_pandas_and_keeps_its_digest(tmp_path, spark, spark_config):
    result = dg.materialize(
        [spark_people, people_in_pandas], resources=resources(tmp_path, spark_config)
    )

    written, record = verified_read(tmp_path, result.run_id, "spark_people", "people_in_pandas")
    assert record.outputs[0].data_hash == written.data_hash


def test_a_spark_folder_read_back_unchanged_is_proven_by_its_part_files(
    tmp_path, spark, spark_config
):
    import fsspec
    from pyspark.sql import DataFrame

    from ubunye_core.materialisations.byte_digest import folder_digest

    @dg.asset(ins={"spark_people": dg.AssetIn(dagster_type=DataFrame)})
    def spark_again(pyspark: PySparkResource, spark_people):
        return spark_people.filter("id > 1")

    @dg.asset
    def pandas_again(spark_people: pd.DataFrame) -> pd.DataFrame:
        return spark_people

    assets = [spark_people, spark_again, pandas_again]
    result = dg.materialize(assets, resources=resources(tmp_path, spark_config))

    written = record_of(tmp_path, "spark_people", result.run_id).outputs[0]
    folder = tmp_path / "data" / "spark_people.parquet"
    assert written.stored_bytes_hash() == folder_digest(fsspec.filesystem("file"), str(folder))
    for reader in ("spark_again", "pandas_again"):
        [read] = record_of(tmp_path, reader, result.run_id).inputs
        assert (read.hash_basis, read.data_hash) == ("stored-bytes", written.data_hash)
    # One part file rewritten with other rows: the digests differ and the read fails.
    part = sorted(folder.glob("part-*.parquet"))[-1]
    spark.createDataFrame(TABLE.slice(0, 1)).coalesce(1).write.parquet(str(tmp_path / "other"))
    part.write_bytes(next((tmp_path / "other").glob("part-*.parquet")).read_bytes())
    for checksum in folder.glob(".*.crc"):  # as a tool other than Hadoop would leave it
        checksum.unlink()
    again = dg.materialize(
        assets,
        selection=[spark_again],
        resources=resources(tmp_path, spark_config),
        raise_on_error=False,
    )
    assert not again.success
    [failure] = again.get_step_failure_events()
    assert "UnverifiedReadError" in failure.step_failure_data.error.to_string()
