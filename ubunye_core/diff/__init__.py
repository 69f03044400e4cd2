"""Which rows changed: two tables compared bucket by bucket (``rows``), and what ``lineage diff``
and ``lineage digest`` report from run records and stored versions (``report``)."""
