"""The event loop watchdog: a held loop is reported once, with where it was held, and its end."""
from __future__ import annotations

import asyncio
import logging
import threading
import time

from rafka.common.loop_watchdog import LoopWatchdog, StallClock


def test_a_stall_is_seen_once_when_its_stamp_gets_old_and_ends_at_a_fresh_stamp():
    clock = StallClock(threshold_s=2.0)
    assert clock.reading(now=11.0, stamp=10.0) is None          # 1 s old: fine
    assert clock.reading(now=12.5, stamp=10.0) == ("began", 2.5)
    assert clock.reading(now=14.0, stamp=10.0) is None          # the same stall goes on
    assert clock.reading(now=15.1, stamp=15.0) == ("ended", 5.0)
    assert clock.reading(now=15.2, stamp=15.0) is None


def test_a_loop_held_by_blocking_code_is_reported_with_that_code(caplog):
    def hold_the_loop_blocking() -> None:
        deadline = time.monotonic() + 0.6
        while time.monotonic() < deadline:
            pass

    async def main() -> LoopWatchdog:
        watchdog = LoopWatchdog(logging.getLogger("test.watchdog"), threshold_s=0.2, tick_s=0.05)
        watchdog.start(asyncio.get_running_loop())
        await asyncio.sleep(0.1)
        hold_the_loop_blocking()
        ended = threading.Event()
        for _ in range(100):   # (the thread reports the end at its next look)
            if any("ran again" in r.getMessage() for r in caplog.records):
                ended.set()
                break
            await asyncio.sleep(0.05)
        watchdog.stop()
        assert ended.is_set()
        return watchdog

    with caplog.at_level(logging.WARNING, logger="test.watchdog"):
        watchdog = asyncio.run(main())
    began = [r.getMessage() for r in caplog.records if "has not run" in r.getMessage()]
    assert watchdog.stalls == 1 and len(began) == 1
    assert "hold_the_loop_blocking" in began[0]
