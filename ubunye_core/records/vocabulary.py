"""The fixed words of records and verdicts: run statuses and drift reasons. No imports, so the
command line can name them in its help without loading the record model."""

#: The statuses a run record has: open while the step runs, then how it ended.
RUN_STATUSES = ("success", "error", "running")

#: The data moved while code, environment, config and every upstream stayed put: non-determinism.
SAME_INPUTS = "same inputs"
#: The data moved under the same code, environment and config, and at least one upstream moved.
INPUTS_CHANGED = "inputs changed"
#: The data moved under the same code, environment and config, and an upstream has neither a
#: digest nor a data version, so it cannot be compared.
INPUTS_UNKNOWN = "inputs unknown"
#: Every reason that can raise a flag, strongest signal first.
DRIFT_REASONS: tuple[str, ...] = (SAME_INPUTS, INPUTS_UNKNOWN, INPUTS_CHANGED)
#: What flags when nothing is configured: `inputs changed` passes, naming the inputs.
DEFAULT_FLAG_REASONS: tuple[str, ...] = (SAME_INPUTS, INPUTS_UNKNOWN)
