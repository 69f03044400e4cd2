"""An external pandas job Dagster launches through Pipes: reports its evidence, reads raw orders,
writes the orders it keeps as Parquet, and reports the receipt (no dagster here: only
ubunye-rows and dagster-pipes); with ``fail_at_start`` it raises before reading anything, with
``no_receipt`` it reports the materialisation without a receipt."""

from pathlib import Path

import pandas as pd
from dagster_pipes import open_dagster_pipes

from ubunye_rows.pipes import report_evidence, report_receipt

with open_dagster_pipes() as pipes:
    report_evidence(pipes)
    if pipes.extras.get("fail_at_start"):
        raise ConnectionError("the warehouse refused the connection")
    raw = pd.read_parquet(pipes.get_extra("source"))
    if pipes.is_partition_step:
        raw = raw[raw["region"] == pipes.partition_key].reset_index(drop=True)
    orders = raw[raw["qty"] > 0].reset_index(drop=True)
    orders["total"] = orders["qty"] * orders["price"]
    if pipes.extras.get("extra_row"):  # the job's own non-determinism: a row from nowhere
        stray = {"id": 99, "region": "north", "qty": 1, "price": 0.5, "total": 0.5}
        orders = pd.concat([orders, pd.DataFrame([stray])], ignore_index=True)
    if pipes.extras.get("unreadable"):  # a column rows-v1 cannot read
        orders["notes"] = [{"kept": True}, 3.5, *["x"] * (len(orders) - 2)]
    target = pipes.get_extra("target")
    if not pipes.extras.get("unreadable"):
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        orders.to_parquet(target, index=False)
    if pipes.extras.get("no_receipt"):
        pipes.report_asset_materialization(metadata={"rows": len(orders)})
    else:
        report_receipt(pipes, orders, inputs={"raw_orders": raw}, location=target, format="parquet")
