"""A PySpark job launched through Pipes (local[2], a non-UTC session zone) in a Python without
dagster: its receipt is hashed on Spark and equals the fingerprint of the same rows here."""

import subprocess
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from ubunye_core.store import LineageStore
from ubunye_dagster import UbunyeResource
from ubunye_rows import fingerprint

pytestmark = pytest.mark.spark

JOB = Path(__file__).parents[1] / "pipes_jobs" / "spark_job.py"
SESSION_ZONE = "America/Sao_Paulo"
RAW = pd.DataFrame(
    {
        "id": [1, 2, 3, 4],
        "qty": [2, 0, 5, 1],
        "price": [1.5, 2.0, 3.25, 0.1],
        "at": pd.to_datetime(
            ["2024-02-18 02:30:00", "2024-11-03 00:15:00", "1969-12-31 23:59:59.999999", None],
            utc=True,
            format="ISO8601",
        ),
        "note": ['say "hi"', None, "line\nbreak", "ünïcode 😀"],
    }
)


def test_a_spark_job_through_pipes_records_the_digest_of_the_rows_it_wrote(
    tmp_path, external_python
):
    lacks = subprocess.run(
        [str(external_python), "-c", "import dagster"], capture_output=True, text=True, timeout=120
    )
    assert "No module named 'dagster'" in lacks.stderr
    source, target = tmp_path / "raw.parquet", tmp_path / "out" / "orders.parquet"
    RAW.to_parquet(source, index=False)

    told: list = []

    @dg.asset(group_name="shop")
    def orders(
        context: dg.AssetExecutionContext, ubunye: UbunyeResource, pipes: dg.PipesSubprocessClient
    ) -> dg.MaterializeResult:
        extras = {"source": str(source), "target": str(target), "session_zone": SESSION_ZONE}
        command = [str(external_python), str(JOB)]
        run = ubunye.run_pipes(pipes, context=context, command=command, extras=extras)
        told.extend(run.invocation.get_custom_messages())
        return run.get_materialize_result()

    client = dg.PipesSubprocessClient(env={"PYTHONPATH": "", "PYTHONNOUSERSITE": "1"})
    settings = UbunyeResource(usecase_dir=str(tmp_path))
    result = dg.materialize([orders], resources={"ubunye": settings, "pipes": client})

    assert told == [{"session_zone": SESSION_ZONE}]
    record = LineageStore.for_usecase_dir(tmp_path).load("dagster/shop/orders", result.run_id)
    kept = RAW[RAW["qty"] > 0].reset_index(drop=True)
    kept["total"] = kept["qty"] * kept["price"]
    [output] = record.outputs
    assert output.data_hash == fingerprint(kept).data_hash
    assert output.row_count == 3
    assert record.inputs[0].data_hash == fingerprint(RAW).data_hash
    assert record.backend == "spark"
    assert "pyspark" in record.environment["packages"]
    assert "dagster" not in record.environment["packages"]
