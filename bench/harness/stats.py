"""The benchmarks' one notion of a spread and of a percentile, and the units rates are shown in.

A run's figure is never a best run on its own: a set of runs is shown as its median with the
[min-max] range, and its spread, (max - min) / median, says how far the runs lie apart (0.3:
within 30% of the median). A percentile is the nearest rank, as Kafka's ProducerPerformance
reports them.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MIB = 1024 * 1024
MB = 1_000_000


@dataclass(frozen=True)
class Spread:
    """Median, lowest and highest of some runs' values, and their spread around the median."""

    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    @property
    def spread(self) -> float:
        """(highest - lowest) / median: 0.3 means the runs lie within 30% of the median."""
        return (self.high - self.low) / self.median if self.median else float("inf")

    def to_json(self) -> dict[str, float | int]:
        return {"n": len(self.values), "median": self.median, "min": self.low, "max": self.high,
                "spread": self.spread}


def spread_of(values: Iterable[float]) -> Spread | None:
    """The Spread of `values`, or None when there are none."""
    found = tuple(values)
    return Spread(found) if found else None


def percentile(ordered: Sequence[float], q: float) -> float:
    """Nearest-rank percentile `q` (0..1] of ascending `ordered` (not empty): the smallest value
    with at least `q` of the values at or below it."""
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]
