"""`replica.max.live.processes`: how many replicas of a broker run at once.

A replica process costs ~60 MiB whether it is busy or not; a dormant replica costs nothing but
its closed log (`reconciler.py`). Writes to many dormant partitions at once (a producer
spreading over 1,000 partitions, say) would wake them all, and start more processes than the
machine holds. Here each wake waits for its turn while the broker runs that many: the replicas
idle longest (quiet ones only: nothing under way, the high watermark at the log end) are put to
rest early to make room, as they would be after `replica.dormant.after.ms` anyway. The cap is
soft: when no replica has come to rest for `wait_s` while a wake waits (every live replica is
busy), it goes ahead over the cap, so a busy broker grows rather than stalls its writes; and
at once when a round finds that no live replica can come to rest within that wait (every one
appended within its producers' retry horizon, which lasts ~30 s): waiting would only hold the
writes the wake is for, past a client's request timeout (issue 56: wakes 10 s apart each held
a wave of writes until their producers retried). A long queue of wakes behind rests that do come
waits its turn, but no wake waits more than `max_wait_s` in all (issue 56: under load, rests
trickling in every few seconds kept each waiter's deadline moving, and writes held for those
wakes outlived their clients' 30 s request timeout). A round that rests nothing is retried
after a pause that doubles up to `MAX_RETRY_AFTER_S` (a fifth of `wait_s` at most): each round asks every live replica how
idle it is (one Ray call each), and five rounds a second of a hundred calls each took a core
of a loaded 2-core machine from the requests the wakes were for.

Pure asyncio, no Ray: the broker supplies the live count and the way to make room.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import AsyncIterator, Awaitable, Callable

log = logging.getLogger(__name__)

WAIT_S = 10.0            # how long a wake waits for room before it goes over the cap
MAX_WAIT_S = 20.0        # ...and in all, rests coming or not: below a client's request.timeout.ms (30 s)
RETRY_AFTER_S = 0.2      # after a round that freed nothing, before the next one...
MAX_RETRY_AFTER_S = 2.0  # ...doubling after each such round up to this
BATCH_FRACTION = 8       # a round rests at least 1/8 of the cap: rounds are few, wakes come in bursts
WARN_EVERY_S = 30.0      # wakes going over the cap are logged at most this often, counted


@dataclass(frozen=True)
class Relief:
    """What one round of making room did: how many replicas it rested, and whether any live
    replica may still come to rest within a wake's wait (False: each is inside its producers'
    retry horizon for longer than that, so waiting for room would only hold the writes)."""

    rested: int
    room_may_come: bool = True


class LiveReplicaCap:
    """Admits wakes while fewer than `limit` replicas run (-1: no limit), resting idle ones first."""

    def __init__(self, limit: int, live: Callable[[], int], make_room: Callable[[int], Awaitable[Relief]], *,
                 wait_s: float = WAIT_S, retry_after_s: float = RETRY_AFTER_S,
                 max_wait_s: float = MAX_WAIT_S, max_retry_after_s: float = MAX_RETRY_AFTER_S) -> None:
        self.limit = limit
        self._live = live                # replicas running now
        self._make_room = make_room      # rest up to n idle replicas: how many it rested, and if more may come
        self.wait_s = wait_s
        self._retry_after_s, self._max_wait_s = retry_after_s, max_wait_s
        self._max_retry_after_s = min(max_retry_after_s, wait_s / 5)   # (a few rounds in every wait)
        self._pause_s = retry_after_s    # before the next round, after one that freed nothing
        self._admitted = 0               # wakes let through whose replica may not count in `live()` yet
        self._waiting = 0                # wakes waiting for room
        self._changed = asyncio.Event()
        self._relieving: asyncio.Task | None = None
        self._last_rest = float("-inf")  # loop time a replica last came to rest
        self._no_room_since: float | None = None   # loop time a round found no replica could rest soon
        self.over_cap = 0                # wakes that went ahead over the cap (for status and tests)
        self._unreported: dict[str, int] = {}      # wakes over the cap not logged yet, by reason
        self._reported_at = float("-inf")

    @property
    def waiting(self) -> int:
        return self._waiting

    def in_use(self) -> int:
        return self._live() + self._admitted

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """A wake's turn: entered once there is room (or `wait_s` passed), left when its start
        is done (its replica then counts in `live()`, or it failed)."""
        if self.limit >= 0:
            await self._wait_for_room()
        self._admitted += 1
        try:
            yield
        finally:
            self._admitted -= 1
            self.changed()

    def changed(self) -> None:
        """Something that holds a process ended (a start, a replica's death): waiters look again."""
        self._changed.set()
        self._changed = asyncio.Event()

    def rested(self) -> None:
        """A replica came to rest (its process is free): room, and progress for the waiters."""
        self._last_rest = asyncio.get_running_loop().time()
        self._no_room_since = None
        self.changed()

    def _no_room_coming(self, now: float) -> bool:
        """A round lately found that no live replica can come to rest within the wait (it holds
        until the next round could run: replicas leave their horizons as time passes)."""
        return self._no_room_since is not None and now - self._no_room_since < self._max_retry_after_s

    async def _wait_for_room(self) -> None:
        loop = asyncio.get_running_loop()
        began = loop.time()
        self._waiting += 1
        try:
            while self.in_use() >= self.limit:
                now = loop.time()
                remaining = min(max(began, self._last_rest) + self.wait_s, began + self._max_wait_s) - now
                if self._no_room_coming(now):
                    self._went_over("every live replica appended within its retry horizon")
                    return
                if remaining <= 0:
                    self._went_over(f"waited {self._max_wait_s:.0f} s for room" if now - began >= self._max_wait_s
                                    else f"no replica came to rest for {self.wait_s:.0f} s")
                    return
                self._relieve()
                changed = self._changed
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(changed.wait(), remaining)
        finally:
            self._waiting -= 1

    def _went_over(self, reason: str) -> None:
        """Count a wake that goes over the cap; log them, with their reasons, every WARN_EVERY_S."""
        self.over_cap += 1
        self._unreported[reason] = self._unreported.get(reason, 0) + 1
        now = time.monotonic()
        if now - self._reported_at >= WARN_EVERY_S:
            reasons = "; ".join(f"{n}: {why}" for why, n in self._unreported.items())
            log.warning("%d wakes went over replica.max.live.processes=%d (%s): %d replicas running",
                        sum(self._unreported.values()), self.limit, reasons, self._live())
            self._unreported.clear()
            self._reported_at = now

    def _relieve(self) -> None:
        if self._relieving is None:
            self._relieving = asyncio.ensure_future(self._relieve_once())

    async def _relieve_once(self) -> None:
        """One round: rest enough idle replicas for the wakes waiting, at least 1/8 of the cap."""
        rested = 0
        try:
            wanted = self.in_use() + self._waiting - self.limit + 1
            relief = await self._make_room(max(wanted, self.limit // BATCH_FRACTION, 1))
            rested = relief.rested
            if rested or relief.room_may_come:
                self._no_room_since = None
            else:
                self._no_room_since = asyncio.get_running_loop().time()
                self.changed()   # (the waiters go over now, not after the pause below)
        except Exception:  # noqa: BLE001 - the next round tries again; waiters go over the cap in time
            log.exception("making room for woken replicas failed")
        finally:
            if rested:
                self._pause_s = self._retry_after_s
                self.rested()
            else:
                await asyncio.sleep(self._pause_s)   # (nothing was quiet: not a busy loop)
                self._pause_s = min(self._pause_s * 2, self._max_retry_after_s)
            self._relieving = None
            self.changed()
