"""What a librdkafka consumer's own statistics say of its fetches during one consume run.

A consume run below the client's ceiling is either the client's doing (its CPU share says
so) or the broker's: few or small fetch answers, or answers that were slow to come. The
consumer emits its statistics (`statistics.interval.ms`) as JSON; this keeps, for the brokers
it fetched from, the fetch requests and bytes received (running totals) and the request round
trips of each interval (count, average, p99), so a slow run shows which it was.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

STATS_INTERVAL_MS = 250   # a run lasts 0.5-5 s: several intervals each


@dataclass
class FetchStats:
    """Fetches and round trips of one consumer, from its statistics callbacks."""

    fetches: int = 0        # Fetch requests sent (the latest running total, over all brokers)
    rx_bytes: int = 0       # bytes received from the brokers (likewise)
    _rtt_sum_us: float = 0.0
    _rtt_count: int = 0
    rtt_p99_max_us: int = 0  # the worst interval's p99 request round trip
    intervals: int = 0       # statistics callbacks seen

    def on_stats(self, text: str) -> None:
        """librdkafka's `stats_cb`: one interval's statistics (JSON)."""
        self.intervals += 1
        brokers = [b for b in json.loads(text).get("brokers", {}).values() if b.get("nodeid", -1) >= 0]
        if not brokers:
            return
        self.fetches = max(self.fetches, sum(b.get("req", {}).get("Fetch", 0) for b in brokers))
        self.rx_bytes = max(self.rx_bytes, sum(b.get("rxbytes", 0) for b in brokers))
        for b in brokers:
            rtt = b.get("rtt", {})
            count = rtt.get("cnt", 0)
            if count:
                self._rtt_sum_us += rtt.get("avg", 0) * count
                self._rtt_count += count
                self.rtt_p99_max_us = max(self.rtt_p99_max_us, rtt.get("p99", 0))

    @property
    def kib_per_fetch(self) -> float:
        return self.rx_bytes / self.fetches / 1024 if self.fetches else 0.0

    @property
    def rtt_avg_ms(self) -> float:
        return self._rtt_sum_us / self._rtt_count / 1000 if self._rtt_count else 0.0

    @property
    def rtt_p99_max_ms(self) -> float:
        return self.rtt_p99_max_us / 1000
