"""ParkedReads: a replica's reads waiting for data are answered on a wake once they have data,
on release with what there is, or at their deadline with what they read last; a closed
connection's reads are forgotten and a closing replica closes the connections still waiting."""
from __future__ import annotations

import asyncio

from rafka.common.errors import ErrorCode
from rafka.partition_worker.messages import FetchResult, Region
from rafka.partition_worker.parked_reads import Follow, ParkedReads

EMPTY = FetchResult(ErrorCode.NONE, 5, 5, 0)
DATA = FetchResult(ErrorCode.NONE, 6, 6, 0, (Region("/seg", 0, 70, 1),), 6)
LONG_WAIT_MS = 60_000


class Transport:
    """Stands in for a data connection's transport: whether it was closed."""

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


class Log:
    """What a parked read finds when it reads again: nothing until `has_data`."""

    def __init__(self) -> None:
        self.has_data = False
        self.reads = 0

    def read(self) -> FetchResult:
        self.reads += 1
        return DATA if self.has_data else EMPTY


def with_reads(scenario) -> list:
    answers: list = []

    async def main():
        reads = ParkedReads(lambda transport, request_id, result, follow: answers.append((request_id, result)))
        await scenario(reads, Log())
    asyncio.run(main())
    return answers


def test_a_wake_answers_the_reads_that_now_have_data_and_keeps_the_others_parked():
    async def scenario(reads, log):
        other = Log()
        reads.park(1, Transport(), 7, log.read, EMPTY, LONG_WAIT_MS)
        reads.park(1, Transport(), 8, other.read, EMPTY, LONG_WAIT_MS)
        reads.wake()                      # nothing yet: both stay
        assert len(reads) == 2
        log.has_data = True
        reads.wake()
        assert len(reads) == 1 and other.reads == 2
    assert with_reads(scenario) == [(7, DATA)]


def test_a_released_read_answers_at_once_with_what_there_is_and_only_once():
    async def scenario(reads, log):
        reads.park(1, Transport(), 7, log.read, EMPTY, LONG_WAIT_MS)
        reads.release(1, 7)
        reads.release(1, 7)               # already answered: nothing more
        reads.release(2, 7)               # another connection's id 7: not this read
        assert len(reads) == 0
    assert with_reads(scenario) == [(7, EMPTY)]


def test_a_read_whose_wait_runs_out_answers_with_what_it_read_last():
    async def scenario(reads, log):
        reads.park(1, Transport(), 7, log.read, EMPTY, 20)
        await asyncio.sleep(0.2)
        assert len(reads) == 0
    assert with_reads(scenario) == [(7, EMPTY)]


def test_reads_answer_at_their_own_deadlines_in_order_whatever_order_they_parked_in():
    answered: list[tuple[int, float]] = []   # (request id, seconds after the first park)

    async def main():
        loop = asyncio.get_running_loop()
        start = loop.time()
        reads = ParkedReads(lambda transport, request_id, result, follow:
                            answered.append((request_id, loop.time() - start)))
        log = Log()
        reads.park(1, Transport(), 7, log.read, EMPTY, 150)
        reads.park(1, Transport(), 8, log.read, EMPTY, 30)    # due first though parked after 7
        reads.park(1, Transport(), 9, log.read, EMPTY, 90)
        reads.park(1, Transport(), 10, log.read, EMPTY, 60)
        reads.release(1, 10)                                 # answered now: not again at 60 ms
        await asyncio.sleep(0.25)
        assert len(reads) == 0
    asyncio.run(main())
    assert [request_id for request_id, _ in answered] == [10, 8, 9, 7]   # each once
    for (request_id, at_s), wait_s in zip(answered[1:], (0.03, 0.09, 0.15)):
        assert wait_s - 0.002 <= at_s < wait_s + 0.05, (request_id, at_s)


def test_the_reads_of_a_closed_connection_are_forgotten_unanswered():
    async def scenario(reads, log):
        reads.park(1, Transport(), 7, log.read, EMPTY, 20)
        reads.park(2, Transport(), 7, log.read, EMPTY, LONG_WAIT_MS)
        reads.drop_connection(1)
        await asyncio.sleep(0.2)          # (its deadline passes: no answer either)
        log.has_data = True
        reads.wake()
    assert with_reads(scenario) == [(7, DATA)]   # connection 2's only


def test_a_closing_replica_closes_the_connections_of_its_parked_reads():
    transports = [Transport(), Transport()]

    async def scenario(reads, log):
        for request_id, transport in enumerate(transports):
            reads.park(1, transport, request_id, log.read, EMPTY, LONG_WAIT_MS)
        reads.close()
        log.has_data = True
        reads.wake()
    assert with_reads(scenario) == []
    assert all(t.closed for t in transports)


def test_a_wake_during_a_wake_goes_round_again():
    """A follower's read moves the high watermark while the reads wake: the consumer read
    parked before it sees the data in the same wake."""
    async def scenario(reads, log):
        def follower_read() -> FetchResult:
            if not log.has_data:
                log.has_data = True
                reads.wake()              # the high watermark moved
            return EMPTY
        reads.park(1, Transport(), 1, log.read, EMPTY, LONG_WAIT_MS)
        reads.park(1, Transport(), 2, follower_read, EMPTY, LONG_WAIT_MS)
        reads.wake()
        assert len(reads) == 1            # the follower's read waits on
    assert with_reads(scenario) == [(1, DATA)]


def test_a_woken_read_is_answered_with_its_follow_and_a_released_one_without():
    follow = Follow(1, 99, 1 << 20, LONG_WAIT_MS)
    answers: list = []

    async def main():
        reads = ParkedReads(lambda transport, request_id, result, f: answers.append((request_id, result, f)))
        log, other = Log(), Log()
        reads.park(1, Transport(), 7, log.read, EMPTY, LONG_WAIT_MS, follow)
        reads.park(1, Transport(), 8, other.read, EMPTY, LONG_WAIT_MS, follow)
        log.has_data = other.has_data = True
        reads.release(1, 8)               # released with data: never followed
        reads.wake()
    asyncio.run(main())
    assert answers == [(8, DATA, None), (7, DATA, follow)]
