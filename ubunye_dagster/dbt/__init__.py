"""Receipts for dbt models, seeds and snapshots (extra ``dbt``: dagster-dbt, dbt-core, an adapter).

In a ``@dbt_assets`` body::

    invocation = dbt.cli(["build"], context=context)
    yield from with_dbt_receipts(invocation, context=context, ubunye=ubunye)

and in a components project, ``ubunye_dagster.dbt.UbunyeDbtProjectComponent`` in place of
``dagster_dbt.DbtProjectComponent``. Each relation is hashed in the warehouse (rows-v1), its run
record saved beside every other asset's.
"""

from ubunye_dagster.dbt.component import UbunyeDbtProjectComponent
from ubunye_dagster.dbt.receipts import with_dbt_receipts

__all__ = ["UbunyeDbtProjectComponent", "with_dbt_receipts"]
