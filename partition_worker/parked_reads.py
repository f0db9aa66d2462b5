"""Reads on a replica's data socket that wait for data: Kafka's fetch purgatory, without tasks.

A read with nothing to answer yet (its offset at the high watermark) parks until an append or a
high-watermark move gives it data, the front end releases it (another partition of its fetch
had data) or its wait runs out. Each parked read used to be a task waiting on three events
through `first_of` (three more tasks and a timer per wake): at 2,000 records/s over six
partitions that bookkeeping was most of a replica's CPU. Here a parked read is an entry with
one timer; a wake re-reads every entry in the replica's own call, and answers those that now
have data at once, on the connection they came from.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Callable

from rafka.common.errors import ErrorCode
from rafka.partition_worker.messages import FetchIsolation, FetchResult


@dataclass(frozen=True)
class Follow:
    """How a consumer's read goes on once answered with data (`data_channel`'s follow read):
    parked again under `follow_id`, on the same connection, with the same limits."""

    connection: int
    follow_id: int
    max_bytes: int
    max_wait_ms: int
    isolation: FetchIsolation = FetchIsolation.HIGH_WATERMARK   # (a read_committed one reads to the LSO)


# Writes a read's answer on its connection; given the read's `Follow` unless it was released.
Answer = Callable[[asyncio.BaseTransport | None, int, FetchResult, "Follow | None"], None]


@dataclass(eq=False)
class ParkedRead:
    """One read waiting: where its answer goes, how to read again, and what it read last."""

    transport: asyncio.BaseTransport | None
    request_id: int
    read_again: Callable[[], FetchResult]
    last: FetchResult
    follow: Follow | None = None
    timer: asyncio.TimerHandle | None = field(default=None, repr=False)


class ParkedReads:
    """The parked reads of one opening of a replica, across its data connections."""

    def __init__(self, answer: Answer) -> None:
        self._answer = answer   # writes a read's answer on its connection
        self._reads: dict[ParkedRead, None] = {}   # (an ordered set: oldest first)
        self._by_id: dict[tuple[int, int], ParkedRead] = {}   # (connection, request id) -> read
        self._waking = False
        self._wake_again = False

    def __len__(self) -> int:
        return len(self._reads)

    def park(self, connection: int, transport: asyncio.BaseTransport | None, request_id: int,
             read_again: Callable[[], FetchResult], empty: FetchResult, max_wait_ms: int,
             follow: Follow | None = None) -> None:
        """Hold the read `request_id` of `connection` (any key unique per connection) until it has
        data, is released or `max_wait_ms` passed; then answer it with what it read last (with
        its `follow`, unless it was released)."""
        read = ParkedRead(transport, request_id, read_again, empty, follow)
        read.timer = asyncio.get_running_loop().call_later(max_wait_ms / 1000, self._finish, connection, read,
                                                           None)
        self._reads[read] = None
        self._by_id[(connection, request_id)] = read

    def release(self, connection: int, request_id: int) -> None:
        """Answer the read now with what there is (nothing to do if it was answered already)."""
        read = self._by_id.get((connection, request_id))
        if read is not None:
            self._finish(connection, read, read.read_again(), released=True)

    def wake(self) -> None:
        """Data came (an append, a high-watermark move): each parked read reads again, and those
        with data or an error are answered. A wake during a wake (a follower's read moving the
        high watermark) makes the running one go round again."""
        if self._waking:
            self._wake_again = True
            return
        self._waking = True
        try:
            again = True
            while again:
                self._wake_again = False
                for (connection, _), read in list(self._by_id.items()):
                    if read not in self._reads:
                        continue   # answered meanwhile
                    result = read.read_again()
                    if result.regions or result.error is not ErrorCode.NONE:
                        self._finish(connection, read, result)
                    else:
                        read.last = result
                again = self._wake_again
        finally:
            self._waking = False

    def drop_connection(self, connection: int) -> None:
        """Forget the reads of a connection that closed (nobody is left to answer)."""
        for key in [k for k in self._by_id if k[0] == connection]:
            read = self._by_id.pop(key)
            self._reads.pop(read, None)
            if read.timer is not None:
                read.timer.cancel()

    def close(self) -> None:
        """The replica closes: every parked read's connection closes unanswered (the front end
        takes that as NOT_LEADER_OR_FOLLOWER and the client refreshes its metadata)."""
        reads = list(self._reads)
        self._reads.clear()
        self._by_id.clear()
        for read in reads:
            if read.timer is not None:
                read.timer.cancel()
            if read.transport is not None:
                read.transport.close()

    def _finish(self, connection: int, read: ParkedRead, result: FetchResult | None, released: bool = False) -> None:
        if self._reads.pop(read, False) is False:
            return
        del self._by_id[(connection, read.request_id)]
        if read.timer is not None:
            read.timer.cancel()
        self._answer(read.transport, read.request_id, read.last if result is None else result,
                     None if released else read.follow)
