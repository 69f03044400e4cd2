"""``ubunye-dagster``: the command line over the lineage store (``commands``) and what it prints
(``render``)."""

from ubunye_core.cli.commands import main

__all__ = ["main"]
