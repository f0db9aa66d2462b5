"""Pacing a producer and reading latency percentiles: shared by the benchmarks that send at a
fixed rate (bench/replication.py, bench/produce_consume.py)."""
from __future__ import annotations

import math

# The longest a paced sender waits (serving its client's callbacks) before it looks again.
PACE_WAIT_S = 0.001


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile `q` (0..1] of ascending `ordered`."""
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def records_due(elapsed_s: float, rate_per_s: float, total: int) -> int:
    """How many of `total` records a sender paced at `rate_per_s` should have sent `elapsed_s`
    seconds after it started (the first goes at once)."""
    return min(total, int(elapsed_s * rate_per_s) + 1)


def pause_s(elapsed_s: float, sent: int, rate_per_s: float) -> float:
    """How long to wait before record number `sent` (from 0) is due, at most PACE_WAIT_S, so the
    sender serves its client's callbacks about once a millisecond."""
    return max(0.0, min(PACE_WAIT_S, sent / rate_per_s - elapsed_s))
