"""Pacing a producer: shared by the benchmarks that send at a fixed rate (bench/replication.py,
bench/produce_consume.py)."""
from __future__ import annotations

import time
from collections.abc import Callable

# The longest a paced sender waits (serving its client's callbacks) before it looks again.
PACE_WAIT_S = 0.001


def records_due(elapsed_s: float, rate_per_s: float, total: int) -> int:
    """How many of `total` records a sender paced at `rate_per_s` should have sent `elapsed_s`
    seconds after it started (the first goes at once)."""
    return min(total, int(elapsed_s * rate_per_s) + 1)


def serve_then_wait(poll: Callable[[float], object], pause: float) -> None:
    """Serve the client's callbacks, then sleep `pause` seconds.

    Not `poll(pause)`: confluent-kafka takes a poll's timeout in whole milliseconds, so
    poll(0.0005) returns at once, and a sender paced at 2,000 records/s (a record due every
    0.5 ms) spun a core that way (66-84% of one, measured), taken from the broker it measured.
    """
    poll(0)
    if pause > 0:
        time.sleep(pause)


def pause_s(elapsed_s: float, sent: int, rate_per_s: float) -> float:
    """How long to wait before record number `sent` (from 0) is due, at most PACE_WAIT_S, so the
    sender serves its client's callbacks about once a millisecond."""
    return max(0.0, min(PACE_WAIT_S, sent / rate_per_s - elapsed_s))
