"""An external pandas job writing two assets through Pipes: orders, then a summary made from
them. It reports no evidence of its own (only receipts, as a job written before
``report_evidence``): with ``fail_at_start`` it raises before reporting anything, with
``fail_after_orders`` after reporting orders, as a job dying midway."""

import pandas as pd
from dagster_pipes import open_dagster_pipes

from ubunye_rows.pipes import report_receipt

with open_dagster_pipes() as pipes:
    if pipes.extras.get("fail_at_start"):
        raise ConnectionError("the warehouse refused the connection")
    raw = pd.read_parquet(pipes.get_extra("source"))
    orders = raw[raw["qty"] > 0].reset_index(drop=True)
    orders_receipt = report_receipt(
        pipes, orders, asset_key="shop/orders", inputs={"raw_orders": raw}
    )
    if pipes.extras.get("fail_after_orders"):
        raise ConnectionError("the warehouse went away while writing the summary")
    summary = orders.groupby("region", as_index=False)["qty"].sum()
    report_receipt(pipes, summary, asset_key="shop/summary", inputs={"shop/orders": orders_receipt})
