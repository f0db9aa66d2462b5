"""Partitions this broker leads whose replica is still starting: requests for them wait.

The controller publishes a new partition's leader at once, as Kafka does, while the leader's
replica process takes 0.3 s (idle) to seconds (a creation burst) to start. A request that
reaches the leader meanwhile (Produce, Fetch, ListOffsets, DeleteRecords, OffsetForLeaderEpoch,
and the group coordinator's own reads and writes of `__consumer_offsets`) waits here for its
replica, bounded (routing.once_started says how long), instead of being refused, so a client
needs no retry for a topic it just created. Waiters resume in the order they came, so their
requests reach the replica in arrival order.

Runs on the front end's event loop; not thread-safe.
"""
from __future__ import annotations

import asyncio
from typing import Callable, Iterable, Iterator, TypeVar

from rafka.common.types import TopicPartition

T = TypeVar("T")


class StartingLeaders:
    """The set of starting leaders, and waits for one of them to run (or to stop starting)."""

    def __init__(self) -> None:
        self._starting: frozenset[TopicPartition] = frozenset()
        self._changed = asyncio.Event()

    def __contains__(self, tp: object) -> bool:
        return tp in self._starting

    def __iter__(self) -> Iterator[TopicPartition]:
        return iter(self._starting)

    def update(self, starting: Iterable[TopicPartition]) -> None:
        """The coordinator's new set (with new metadata); wakes every waiter to look again."""
        self._starting = frozenset(starting)
        self.changed()

    def changed(self) -> None:
        """The local leaders changed: waiters look again."""
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait(self, tp: TopicPartition, lookup: Callable[[TopicPartition], T | None],
                   timeout_s: float | None) -> T | None:
        """`lookup(tp)` once it finds something, or None once `tp` no longer starts (its start
        failed, or it leads elsewhere now) or `timeout_s` (None: no bound) has passed."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout_s is None else loop.time() + timeout_s
        while True:
            found = lookup(tp)
            remaining = None if deadline is None else deadline - loop.time()
            if found is not None or tp not in self._starting or (remaining is not None and remaining <= 0):
                return found
            try:   # (no task per wait: waiters resume in the order they came, and so queue their requests)
                async with asyncio.timeout(remaining):
                    await self._changed.wait()
            except TimeoutError:
                return lookup(tp)
