"""``python -m ubunye_core.cli``: the ``ubunye-dagster`` command."""

import sys

from ubunye_core.cli import main

sys.exit(main())
