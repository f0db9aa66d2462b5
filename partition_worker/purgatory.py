"""The requests of one served partition that wait: Kafka's produce and fetch purgatories.

An acks=all append waits until the high watermark passes it (Kafka's DelayedProduce); a read
by actor call (`PartitionReplica.read`) with nothing to answer yet waits for data (Kafka's
DelayedFetch). The data socket's reads wait as entries of `parked_reads.py`, without tasks; the
purgatory wakes them with the rest. Every wait belongs to one opening of a replica process and
ends when that opening closes: the process may serve another partition next, whose state says
nothing of this append or read.
"""
from __future__ import annotations

import asyncio
import time
from typing import Callable

from rafka.common.errors import ErrorCode
from rafka.common.events import first_of
from rafka.partition_worker.messages import FetchResult
from rafka.partition_worker.parked_reads import ParkedReads


def is_final(result: FetchResult, max_wait_ms: int) -> bool:
    """Whether a read's first result is its answer: data, an error, or no wait asked for."""
    return bool(result.regions) or result.error is not ErrorCode.NONE or max_wait_ms <= 0


class Purgatory:
    """What waits in one opening, and the wakes that end the waits. Single event loop: waits
    yield in `first_of`; wakes never yield."""

    def __init__(self, closed: asyncio.Event, parked: ParkedReads) -> None:
        self._closed = closed      # the opening's: set when it closes
        self._parked = parked      # the data socket's reads waiting for data
        self._replicated = asyncio.Event()   # set (and replaced) whenever the high watermark moves
        self._appended = asyncio.Event()     # set (and replaced) at each wake while reads by call wait
        self._reads_by_call = 0              # reads by actor call waiting on `_appended` now
        self.awaiting_replication = 0        # acks=all appends not answered yet

    def data_arrived(self) -> None:
        """Parked reads read again: those on the data socket here and now, those by actor call
        once they run."""
        if self._reads_by_call:   # a new Event per append costs the data socket's reads for nothing
            self._appended.set()
            self._appended = asyncio.Event()
        self._parked.wake()

    def high_watermark_moved(self) -> None:
        """Wake acks=all appends waiting on the high watermark, and every parked read."""
        self._replicated.set()
        self._replicated = asyncio.Event()
        self.data_arrived()

    async def await_replication(self, outcome: Callable[[], ErrorCode | None], timeout_ms: int) -> ErrorCode:
        """Wait until `outcome()` (checked at each high watermark move) is not None, and answer
        it; REQUEST_TIMED_OUT after `timeout_ms` (the records stay in the log, as in Kafka), and
        NOT_LEADER_OR_FOLLOWER once the opening closes."""
        self.awaiting_replication += 1
        try:
            closed = self._closed
            deadline = time.monotonic() + timeout_ms / 1000
            while True:
                if closed.is_set():
                    return ErrorCode.NOT_LEADER_OR_FOLLOWER
                answer = outcome()
                if answer is not None:
                    return answer
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return ErrorCode.REQUEST_TIMED_OUT
                await first_of([self._replicated, closed], remaining)
        finally:
            self.awaiting_replication -= 1

    async def await_data(self, read_again: Callable[[], FetchResult], max_wait_ms: int,
                         result: FetchResult) -> FetchResult:
        """After the empty `result`, read again at each wake until data or an error comes or
        `max_wait_ms` passes; `result` unchanged if the opening closes meanwhile."""
        closed = self._closed
        deadline = time.monotonic() + max_wait_ms / 1000
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or closed.is_set():
                return result
            self._reads_by_call += 1
            try:
                await first_of([self._appended, closed], remaining)
            finally:
                self._reads_by_call -= 1
            if closed.is_set():
                return result
            result = read_again()
            if time.monotonic() >= deadline or result.regions or result.error is not ErrorCode.NONE:
                return result
