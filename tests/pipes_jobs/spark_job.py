"""An external PySpark job Dagster launches through Pipes: local[2] with a non-UTC session zone;
the receipt is hashed on Spark, in one aggregation (no dagster here)."""

import os
import sys

from dagster_pipes import open_dagster_pipes
from pyspark.sql import SparkSession

from ubunye_rows.pipes import report_receipt

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers hash with this Python

with open_dagster_pipes() as pipes:
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", pipes.get_extra("session_zone"))
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    pipes.report_custom_message({"session_zone": spark.conf.get("spark.sql.session.timeZone")})
    raw = spark.read.parquet(pipes.get_extra("source"))
    orders = raw.where(raw.qty > 0).withColumn("total", raw.qty * raw.price)
    target = pipes.get_extra("target")
    orders.write.mode("overwrite").parquet(target)
    report_receipt(pipes, orders, inputs={"raw_orders": raw}, location=target, format="parquet")
    spark.stop()
