"""Interleaved pairs of runs: the order rafka and its peer run in, and the one notion of a pair's
ratio (the median of the ratios within each pair), with the table rows built from them.

A machine's load drifts (other work, thermal limits, page cache), so runs of one broker all
taken before the other's would compare two moments, not two brokers. Each pair runs the same
workload on both brokers back to back (A B A B ...), and the table shows the median of the
pairs with the range, and the median of the ratios within each pair: never the best run,
which would reward whichever broker got the quietest moment.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from harness.stats import Spread, spread_of
from harness.table import Row

W = TypeVar("W")
# Fewer pairs than this and a comparison's target is shown but not judged.
MIN_PAIRS = 5


@dataclass(frozen=True)
class Slot:
    """One run in the schedule: pair number (from 1), the workload, and which broker runs it."""

    pair: int
    workload: object
    broker: str


def interleave(pairs: int, workloads: Sequence[W], brokers: Sequence[str]) -> list[Slot]:
    """Every workload on every broker, `pairs` times: within a pair each workload runs on each
    broker in turn (A B, then the next workload A B), so the two runs of a pair are adjacent."""
    return [Slot(pair, workload, broker) for pair in range(1, pairs + 1)
            for workload in workloads for broker in brokers]


def paired(ours: Mapping[int, float], peer: Mapping[int, float]) -> list[tuple[float, float]]:
    """(ours, peer) for each pair number both sides completed, in pair order."""
    return [(ours[n], peer[n]) for n in sorted(ours) if n in peer]


def paired_ratios(ours: Mapping[int, float], peer: Mapping[int, float]) -> Spread | None:
    """The ratio ours / peer within each completed pair."""
    return spread_of(a / b for a, b in paired(ours, peer) if b)


def paired_row(metric: str, ours: Mapping[int, float], peer: Mapping[int, float], unit: str,
               target: tuple[str, float] | None = None, min_pairs: int = MIN_PAIRS) -> Row:
    """A table row comparing two sides run in pairs (pair number -> value): each side's median
    with its [min-max] range, and the median of the per-pair ratios. With fewer than
    `min_pairs` completed pairs the target is shown but not judged."""
    mine, theirs, ratios = spread_of(ours.values()), spread_of(peer.values()), paired_ratios(ours, peer)
    count = len(paired(ours, peer))
    return Row(f"{metric}, median of {count} pairs", mine.median if mine else None,
               theirs.median if theirs else None, unit, target,
               rafka_range=(mine.low, mine.high) if mine else None,
               peer_range=(theirs.low, theirs.high) if theirs else None,
               given_ratio=ratios.median if ratios else None, ratio_given=True,
               unjudged=f"n/a (<{min_pairs} pairs)" if target and count < min_pairs else "")


def spread_row(metric: str, values: Iterable[float], limit: float, min_runs: int = MIN_PAIRS) -> Row:
    """(max - min) / median of one side's runs against `limit` (0.3: within 30%); not judged
    with fewer than `min_runs` runs."""
    found = spread_of(values)
    count = len(found.values) if found else 0
    return Row(f"{metric}, {count} runs", found.spread if found else None, limit, "ratio", ("<=", 1.0),
               unjudged=f"n/a (<{min_runs} runs)" if count < min_runs else "")
