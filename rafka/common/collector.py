"""Keep Python's cyclic garbage collector off what a process keeps for its whole life.

A Ray actor starts with ~90k objects tracked by the collector (the interpreter's modules, Ray's
and ours); every full collection walks all of them. Measured in the front end at 2,000
records/s: a full collection held its event loop for 90 ms, a pause every request under way
then waits out. `gc.freeze()` moves what is alive once the actor has started into a generation
the collector never scans, so later collections walk only what was made since.

The front end and the broker's coordinator call it, once each per broker. Replica processes do
not: a collection at each start would add to the start a creation storm waits on. Replicas do
make full collections (69 and 135 ms were logged while the failover drill killed and restarted
brokers), and a freeze without collecting first was tried once a replica started (c320ae9);
two fresh-clone suite runs with it then each saw a replica's background work stop (its
cleaner, its ISR rejoin), not reproduced since, so it was reverted.

Whether that stays true is for the logs to say: `watch_long_collections` logs every full
collection that held its process for `LONG_COLLECTION_MS` or more, with whose it was (the
broker, the partition): a pause every request under way there waited out. Objects kept a
little too long bring them on: a change that kept each parked read until its deadline rather
than until it was answered had records wait 100-300 ms in every replica at 2,000 records/s, and
freeing them when answered ended that.
"""
from __future__ import annotations

import gc
import logging
import time
from typing import Any, Callable

# A full collection this long or longer is logged (a fetch at the log's end is answered in 1-10 ms).
LONG_COLLECTION_MS = 20.0


def freeze_startup_objects() -> None:
    """Collect once, then leave everything still alive out of later collections (call it when
    an actor has finished starting; calling it again adds what was made since)."""
    gc.collect()
    gc.freeze()


class LongCollections:
    """A `gc.callbacks` entry that logs each full collection (the oldest generation) that took
    at least `threshold_ms`."""

    def __init__(self, logger: logging.Logger | logging.LoggerAdapter, threshold_ms: float = LONG_COLLECTION_MS,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.logger = logger
        self.threshold_ms = threshold_ms
        self._clock = clock
        self._started: float | None = None

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._started = self._clock()
            return
        if self._started is None:
            return
        took_ms = (self._clock() - self._started) * 1000
        self._started = None
        if took_ms >= self.threshold_ms:
            self.logger.warning("a full garbage collection held this process for %.0f ms (%d objects"
                                " freed, %d uncollectable)", took_ms, info.get("collected", 0),
                                info.get("uncollectable", 0))


def watch_long_collections(logger: logging.Logger | logging.LoggerAdapter,
                           threshold_ms: float = LONG_COLLECTION_MS) -> LongCollections:
    """Log this process's long full collections through `logger` from now on (one watch per
    process: called again, as a spare replica process takes another partition, it only
    changes the logger)."""
    for callback in gc.callbacks:
        if isinstance(callback, LongCollections):
            callback.logger, callback.threshold_ms = logger, threshold_ms
            return callback
    watch = LongCollections(logger, threshold_ms)
    gc.callbacks.append(watch)
    return watch
