"""`ProcessPool`: how one broker's replica processes are shared out under pressure.

Replica processes are the broker's scarce resource: `replica.max.live.processes` caps how many
run (`live_cap.py`), and a start that finds no spare process ready would wait ~1 s of a core
for a new one. Both are answered by resting live replicas that are idle: to make room for
waiting wakes (idle at least `MIN_IDLE_TO_MAKE_ROOM_MS`), and to lend one process to a start
(idle at least `MIN_IDLE_TO_LEND_MS`, one at a time). Which replicas are idle enough, idlest
first, is a pure choice (`idlest`); how idle each is, each replica says (quiet ones only: a
replica that wrote within its producers' retry horizon reports itself busy, with the time left
in it, so a round can also tell whether any replica may come to rest soon: `room_may_come`).
The internal topics' replicas (`__consumer_offsets`, `__transaction_state`) are never rested
early: group members' heartbeats wait behind their commits on a connection, and a commit
that met a wake under load held them past the session timeout (franz-go's TestGroupETL: a
lent `__consumer_offsets` replica took 22 s to wake); they rest after replica.dormant.after.ms.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Awaitable, Callable, Mapping

from rafka.common.types import INTERNAL_TOPICS, TopicPartition
from rafka.coordinator.broker.live_cap import LiveReplicaCap, Relief

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


def room_may_come(idle_ms: Mapping[TopicPartition, Any], unasked: int, retry_horizon_ms: int,
                   within_ms: float) -> bool:
    """Whether any live replica may come to rest within `within_ms`: one that answered an idle
    time (busy ones, 0, are soon quiet), or a negative one (inside its retry horizon) with less
    than `within_ms` left; or, among the `unasked` (opened too lately to be asked: each was woken
    for a write, so it appends now), any when the horizon is shorter than `within_ms`. A replica
    that did not answer is not counted on."""
    if unasked and retry_horizon_ms < within_ms:
        return True
    return any(isinstance(ms, (int, float)) and not isinstance(ms, bool) and -ms < within_ms
               for ms in idle_ms.values())


class ProcessPool:
    """The live cap and the lending of idle replicas' processes, for one broker."""

    def __init__(self, limit: int, spares: int, running: Callable[[], Mapping[TopicPartition, Any]],
                 idle_for_ms: Callable[[Any], Awaitable[float]], rest: Callable[[TopicPartition, int], Awaitable[bool]],
                 ticking: Callable[[], bool], log: logging.Logger | logging.LoggerAdapter,
                 retry_horizon_ms: int = 0) -> None:
        self._running = running        # live replicas (LaunchedReplica: .pid, .opened_at)
        self._idle_for_ms = idle_for_ms
        self._rest = rest
        self._ticking = ticking        # a reconciler tick runs (no rest may)
        self._log = log
        self._spares = spares
        self._retry_horizon_ms = retry_horizon_ms   # replica.dormant.retry.horizon.ms
        self._lending = asyncio.Lock()
        self._stopped = False
        self.cap = LiveReplicaCap(limit, lambda: len(self._running()), self.make_room)

    def rests_coming(self) -> bool:
        """Near the cap, wakes will take the processes of replicas rested to make room for them."""
        return 0 <= self.cap.limit <= self.cap.in_use() + self._spares

    async def make_room(self, count: int) -> Relief:
        """replica.max.live.processes is reached and wakes wait: rest up to `count` of the live
        replicas idle longest; how many rested, and whether any may come to rest within a wait."""
        running = dict(self._running())
        answers, unasked = await self._idleness(running, MIN_IDLE_TO_MAKE_ROOM_MS)
        chosen = idlest(answers, count, MIN_IDLE_TO_MAKE_ROOM_MS)
        self._log.info("%d replicas run (replica.max.live.processes=%d) and %d wakes wait: resting %d idle ones",
                       len(running), self.cap.limit, self.cap.waiting, len(chosen))
        rested = sum(await asyncio.gather(*[self._rest(tp, running[tp].pid) for tp in chosen]))
        return Relief(rested, room_may_come(answers, unasked, self._retry_horizon_ms, self.cap.wait_s * 1000))

    async def lend_a_process(self) -> bool:
        """A replica starts and no spare process is ready: rest the live replica idle longest, if one
        has been idle for MIN_IDLE_TO_LEND_MS, so that the start takes its process (~0.1 s) instead
        of a new one (~1 s of a core; seconds under load). One at a time: each rest frees one
        process, for the start waiting longest. Not during a tick (no rest runs then)."""
        if self._stopped or self._ticking():
            return False
        async with self._lending:
            running = dict(self._running())
            answers, _ = await self._idleness(running, MIN_IDLE_TO_LEND_MS)
            chosen = idlest(answers, 1, MIN_IDLE_TO_LEND_MS)
            if chosen and await self._rest(chosen[0], running[chosen[0]].pid):
                self._log.info("no spare process was ready: replica %s rested early (idle) to lend its process",
                               chosen[0])
                return True
            return False

    async def _idleness(self, running: Mapping[TopicPartition, Any], min_idle_ms: int
                        ) -> tuple[dict[TopicPartition, Any], int]:
        """How idle each live replica open at least `min_idle_ms` is (its answer, or the error
        of a call that failed), and how many were opened too lately to be asked; internal
        topics' replicas are neither (never rested early)."""
        restable = {tp: r.opened_at for tp, r in running.items() if tp.topic not in INTERNAL_TOPICS}
        asked = open_long_enough(restable, time.monotonic(), min_idle_ms)
        answers = await asyncio.gather(*[asyncio.wait_for(self._idle_for_ms(running[tp]), IDLENESS_TIMEOUT_S)
                                         for tp in asked], return_exceptions=True)
        return dict(zip(asked, answers)), len(restable) - len(asked)

    def stop(self) -> None:
        self._stopped = True
