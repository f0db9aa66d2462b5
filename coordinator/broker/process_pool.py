"""`ProcessPool`: how one broker's replica processes are shared out under pressure.

Replica processes are the broker's scarce resource: `replica.max.live.processes` caps how many
run (`live_cap.py`), and a start that finds no spare process ready would wait ~1 s of a core
for a new one. Both are answered by resting live replicas that are idle: to make room for
waiting wakes (idle at least `MIN_IDLE_TO_MAKE_ROOM_MS`), and to lend one process to a start
(idle at least `MIN_IDLE_TO_LEND_MS`, one at a time). Which replicas are idle enough, idlest
first, is a pure choice (`idlest`); how idle each is, each replica says (quiet ones only: a
replica that wrote within its producers' retry horizon reports itself busy).
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Awaitable, Callable, Mapping

from rafka.common.types import TopicPartition
from rafka.coordinator.broker.live_cap import LiveReplicaCap

IDLENESS_TIMEOUT_S = 5.0       # a live replica's answer to how long it has been idle
# A replica rested to make room has been idle this long at least: one just woken has its
# held writes on their way (resting it first would answer them NOT_LEADER_OR_FOLLOWER).
MIN_IDLE_TO_MAKE_ROOM_MS = 250
# A start that finds no spare process ready rests a replica idle at least this long for its
# process rather than wait ~1 s of a core for a new one (below the cap: no pressure, so only
# replicas that have clearly stopped being written to).
MIN_IDLE_TO_LEND_MS = 5000


def open_long_enough(opened_at: Mapping[TopicPartition, float], now: float, min_idle_ms: int) -> list[TopicPartition]:
    """Replicas open at least `min_idle_ms` (only they can have been idle that long): in a storm of
    wakes most were just woken, and asking those how idle they are wastes a call each."""
    before = now - min_idle_ms / 1000
    return [tp for tp, at in opened_at.items() if at <= before]


def idlest(idle_ms: Mapping[TopicPartition, Any], count: int, min_idle_ms: int) -> list[TopicPartition]:
    """Up to `count` replicas idle at least `min_idle_ms`, idlest first. A replica whose answer was
    not a number (it failed or timed out) is not chosen."""
    ranked = sorted(((ms, tp) for tp, ms in idle_ms.items()
                     if isinstance(ms, (int, float)) and not isinstance(ms, bool) and ms >= min_idle_ms),
                    key=lambda pair: -pair[0])
    return [tp for _, tp in ranked[:count]]


class ProcessPool:
    """The live cap and the lending of idle replicas' processes, for one broker."""

    def __init__(self, limit: int, spares: int, running: Callable[[], Mapping[TopicPartition, Any]],
                 idle_for_ms: Callable[[Any], Awaitable[float]], rest: Callable[[TopicPartition, int], Awaitable[bool]],
                 ticking: Callable[[], bool], log: logging.Logger | logging.LoggerAdapter) -> None:
        self._running = running        # live replicas (LaunchedReplica: .pid, .opened_at)
        self._idle_for_ms = idle_for_ms
        self._rest = rest
        self._ticking = ticking        # a reconciler tick runs (no rest may)
        self._log = log
        self._spares = spares
        self._lending = asyncio.Lock()
        self._stopped = False
        self.cap = LiveReplicaCap(limit, lambda: len(self._running()), self.make_room)

    def rests_coming(self) -> bool:
        """Near the cap, wakes will take the processes of replicas rested to make room for them."""
        return 0 <= self.cap.limit <= self.cap.in_use() + self._spares

    async def make_room(self, count: int) -> int:
        """replica.max.live.processes is reached and wakes wait: rest up to `count` of the live
        replicas idle longest; how many rested."""
        chosen, live = await self.choose(count, MIN_IDLE_TO_MAKE_ROOM_MS)
        self._log.info("%d replicas run (replica.max.live.processes=%d) and %d wakes wait: resting %d idle ones",
                       live, self.cap.limit, self.cap.waiting, len(chosen))
        rested = await asyncio.gather(*[self._rest(tp, pid) for tp, pid in chosen])
        return sum(rested)

    async def lend_a_process(self) -> bool:
        """A replica starts and no spare process is ready: rest the live replica idle longest, if one
        has been idle for MIN_IDLE_TO_LEND_MS, so that the start takes its process (~0.1 s) instead
        of a new one (~1 s of a core; seconds under load). One at a time: each rest frees one
        process, for the start waiting longest. Not during a tick (no rest runs then)."""
        if self._stopped or self._ticking():
            return False
        async with self._lending:
            chosen, _ = await self.choose(1, MIN_IDLE_TO_LEND_MS)
            if chosen and await self._rest(*chosen[0]):
                self._log.info("no spare process was ready: replica %s rested early (idle) to lend its process",
                               chosen[0][0])
                return True
            return False

    async def choose(self, count: int, min_idle_ms: int) -> tuple[list[tuple[TopicPartition, int]], int]:
        """Up to `count` live replicas idle at least `min_idle_ms`, idlest first, as (partition,
        pid); and how many replicas run."""
        running = dict(self._running())
        asked = open_long_enough({tp: r.opened_at for tp, r in running.items()}, time.monotonic(), min_idle_ms)
        answers = await asyncio.gather(*[asyncio.wait_for(self._idle_for_ms(running[tp]), IDLENESS_TIMEOUT_S)
                                         for tp in asked], return_exceptions=True)
        chosen = idlest(dict(zip(asked, answers)), count, min_idle_ms)
        return [(tp, running[tp].pid) for tp in chosen], len(running)

    def stop(self) -> None:
        self._stopped = True
