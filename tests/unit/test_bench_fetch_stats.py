"""The benchmark's reading of a consumer's own statistics: fetches, bytes and round trips."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _fetch_stats import FetchStats  # noqa: E402


def interval(fetches: int, rx_bytes: int, count: int, avg_us: int, p99_us: int) -> str:
    """One interval's statistics as librdkafka emits them: a bootstrap entry (no node id yet)
    and the broker the consumer fetched from."""
    return json.dumps({"brokers": {
        "127.0.0.1:9092/bootstrap": {"nodeid": -1, "req": {"Fetch": 0}, "rxbytes": 999,
                                     "rtt": {"cnt": 0, "avg": 0, "p99": 0}},
        "127.0.0.1:9092/1": {"nodeid": 1, "req": {"Fetch": fetches, "Metadata": 2}, "rxbytes": rx_bytes,
                             "rtt": {"cnt": count, "avg": avg_us, "p99": p99_us}},
    }})


def test_totals_come_from_the_latest_interval_and_round_trips_from_every_one() -> None:
    stats = FetchStats()
    stats.on_stats(interval(fetches=4, rx_bytes=4 << 20, count=6, avg_us=2_000, p99_us=9_000))
    stats.on_stats(interval(fetches=10, rx_bytes=20 << 20, count=2, avg_us=10_000, p99_us=30_000))
    stats.on_stats(interval(fetches=10, rx_bytes=20 << 20, count=0, avg_us=0, p99_us=0))   # idle interval
    assert (stats.fetches, stats.rx_bytes) == (10, 20 << 20)
    assert stats.kib_per_fetch == pytest.approx(2048.0)
    assert stats.rtt_avg_ms == pytest.approx((6 * 2 + 2 * 10) / 8)   # weighted by requests
    assert stats.rtt_p99_max_ms == pytest.approx(30.0)


def test_no_broker_yet_leaves_everything_at_zero() -> None:
    stats = FetchStats()
    stats.on_stats(json.dumps({"brokers": {"a/bootstrap": {"nodeid": -1, "req": {"Fetch": 3}, "rxbytes": 5}}}))
    assert (stats.fetches, stats.kib_per_fetch, stats.rtt_avg_ms, stats.rtt_p99_max_ms) == (0, 0.0, 0.0, 0.0)


def test_a_real_consumer_reports_its_fetches() -> None:
    """confluent-kafka's statistics, read from the instant stand-in broker: every answer counted."""
    import _kafka
    from _instant_broker import instant_broker

    with instant_broker("stats", _kafka.PARTITIONS, 60_000, 100) as bootstrap:
        consumed, _, _, problems, stats = _kafka.consume(bootstrap, "stats", 60_000, 100, idle_timeout_s=10,
                                                          fetch_stats=True)
    assert (consumed, problems) == (60_000, [])
    assert stats.fetches > 0
    assert stats.kib_per_fetch * stats.fetches * 1024 >= 60_000 * 100   # at least every record's value came
