"""What the benches share: their whole-number options, and each way's median against a
baseline's."""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Mapping, Sequence


def whole_number_options(doc: str, argv: list[str] | None, **defaults: int) -> argparse.Namespace:
    """``argv`` parsed for ``--name N`` options, one per default (``repeats=5``: ``--repeats``,
    5 when not given); the help's description is the first paragraph of ``doc``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    for name, default in defaults.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=default)
    return parser.parse_args(argv)


def medians_against(
    timings: Mapping[str, Sequence[float]], baseline: str
) -> dict[str, tuple[float, float]]:
    """Each way's median seconds and that median divided by the ``baseline`` way's, in order."""
    base = statistics.median(timings[baseline])
    medians = {name: statistics.median(seconds) for name, seconds in timings.items()}
    return {name: (median, median / base) for name, median in medians.items()}
