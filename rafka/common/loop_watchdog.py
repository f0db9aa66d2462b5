"""`LoopWatchdog`: says when an actor's event loop was held, and where.

A front end whose event loop does not run answers nobody: clients' connections time out
(franz-go's suite saw dials and reads time out together, then group members expelled for
missed heartbeats), and nothing in the log said why. The loop stamps the time every
`TICK_S`; a daemon thread looks every `TICK_S` too, and when the stamp is older than
`threshold_s` it logs a warning with the loop thread's stack at that moment (once per stall:
the code holding the loop, or the place where it waited for a busy machine's CPU), and when
the loop runs again, how long the stall lasted.

`StallClock` is the pure part: it turns (now, last stamp) readings into "a stall began",
"it goes on" and "it ended after N s".
"""
from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import traceback
from dataclasses import dataclass

TICK_S = 0.25
THRESHOLD_S = 2.0
STACK_FRAMES = 12   # the innermost frames of the loop thread's stack that a warning shows


@dataclass
class StallClock:
    """Stalls of a loop from readings of its last stamp: a stall is a stamp older than
    `threshold_s`; it ends at the first reading with a fresh stamp."""

    threshold_s: float = THRESHOLD_S
    _since: float | None = None   # the stamp the stall began after

    def reading(self, now: float, stamp: float) -> tuple[str, float] | None:
        """("began", age) when a stall is first seen, ("ended", length) at its end, else None."""
        age = now - stamp
        if self._since is None:
            if age > self.threshold_s:
                self._since = stamp
                return "began", age
            return None
        if stamp > self._since:
            length, self._since = stamp - self._since, None
            return "ended", length
        return None


class LoopWatchdog:
    """Watches one event loop from a daemon thread (see the module docstring)."""

    def __init__(self, logger: logging.Logger | logging.LoggerAdapter, threshold_s: float = THRESHOLD_S,
                 tick_s: float = TICK_S) -> None:
        self._log = logger
        self._clock = StallClock(threshold_s)
        self._tick_s = tick_s
        self._stamp = time.monotonic()
        self._loop_thread: int | None = None
        self._stop = threading.Event()
        self.stalls = 0   # stalls seen (for status and tests)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start stamping on `loop` (call from its thread) and watching from a thread."""
        self._loop_thread = threading.get_ident()
        self._stamp = time.monotonic()
        loop.call_soon(self._tick, loop)
        threading.Thread(target=self._watch, name="loop-watchdog", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        self._stamp = time.monotonic()
        if not self._stop.is_set():
            loop.call_later(self._tick_s, self._tick, loop)

    def _watch(self) -> None:
        while not self._stop.wait(self._tick_s):
            seen = self._clock.reading(time.monotonic(), self._stamp)
            if seen is None:
                continue
            what, seconds = seen
            if what == "began":
                self.stalls += 1
                self._log.warning("the event loop has not run for %.1f s; its thread is at:\n%s",
                                  seconds, self._loop_stack())
            else:
                self._log.warning("the event loop ran again after %.1f s", seconds)

    def _loop_stack(self) -> str:
        frame = sys._current_frames().get(self._loop_thread) if self._loop_thread is not None else None
        if frame is None:
            return "  (unknown)"
        return "".join(traceback.format_stack(frame)[-STACK_FRAMES:]).rstrip()
