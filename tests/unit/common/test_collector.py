"""Long full collections are logged with whose process it was; young ones and quick ones are not."""
from __future__ import annotations

import gc
import logging

from rafka.common.collector import LongCollections, watch_long_collections


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_full_collection_over_the_threshold_is_logged_and_a_quick_or_young_one_is_not(caplog) -> None:
    clock = Clock()
    watch = LongCollections(logging.getLogger("test-replica"), threshold_ms=20, clock=clock)
    with caplog.at_level(logging.WARNING, "test-replica"):
        for generation, took_s in ((2, 0.005), (0, 0.5), (1, 0.5), (2, 0.09)):
            watch("start", {"generation": generation})
            clock.now += took_s
            watch("stop", {"generation": generation, "collected": 7, "uncollectable": 0})
    assert [r.getMessage() for r in caplog.records] == [
        "a full garbage collection held this process for 90 ms (7 objects freed, 0 uncollectable)"]


def test_one_watch_per_process_whose_logger_follows_the_partition_it_serves(caplog) -> None:
    first, second = logging.getLogger("test-first"), logging.getLogger("test-second")
    before = list(gc.callbacks)
    try:
        watch = watch_long_collections(first, threshold_ms=0)
        assert watch_long_collections(second, threshold_ms=0) is watch
        assert sum(isinstance(c, LongCollections) for c in gc.callbacks) == 1
        with caplog.at_level(logging.WARNING):
            gc.collect()   # a real full collection, over a threshold of 0 ms
        assert [r.name for r in caplog.records] == ["test-second"]
    finally:
        gc.callbacks[:] = before

