"""OpenLineage run events of a finished run record (the ``openlineage`` extra)."""
