"""Engine-neutral core of ubunye-dagster: the run record v2 (ADR 006), its verdicts, store, row
diff and CLI. The rows-v1 hash itself is ``ubunye_rows``."""

__version__ = "0.1.0"

__all__ = ["__version__"]
