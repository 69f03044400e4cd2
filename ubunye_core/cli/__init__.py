"""``ubunye-dagster``: the command line over the lineage store. ``app`` is its frame and ``main``,
``selection`` what a command works on, ``commands`` the commands (importing it registers them),
``render`` what they print."""

from ubunye_core.cli import commands as commands
from ubunye_core.cli.app import main

__all__ = ["main"]
