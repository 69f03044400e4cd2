"""An external job reporting one table through Pipes, as a job on another cluster would."""

import pandas as pd
from dagster_pipes import open_dagster_pipes

from ubunye_rows.pipes import report_receipt

with open_dagster_pipes() as pipes:
    scores = pd.DataFrame({"sku": [f"sku-{i:03d}" for i in range(50)], "score": range(50)})
    report_receipt(pipes, scores, asset_key="pipes_scores")
