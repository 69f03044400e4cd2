"""Engine-neutral core of ubunye-dagster: the rows-v1 hash and the run record v2 (ADR 006)."""

from ubunye_core.hashing import Fingerprint, fingerprint

__version__ = "0.1.0"

__all__ = ["Fingerprint", "__version__", "fingerprint"]
