"""The purgatory of one served partition: an acks=all append waits for its outcome, a read by
call waits for data, both end at their deadline or when the partition closes, and a wake also
reaches the reads parked on the data socket."""
from __future__ import annotations

import asyncio

from rafka.common.errors import ErrorCode
from rafka.partition_worker.messages import FetchResult, Region
from rafka.partition_worker.parked_reads import ParkedReads
from rafka.partition_worker.purgatory import Purgatory, is_final

EMPTY = FetchResult(ErrorCode.NONE, 5, 5, 0)
DATA = FetchResult(ErrorCode.NONE, 6, 6, 0, (Region("/seg", 0, 70, 1),), 6)
LONG_MS = 60_000


def run(scenario) -> list:
    """`scenario(purgatory, closed)`; returns the answers of the data socket's parked reads."""
    answers: list = []

    async def main() -> None:
        closed = asyncio.Event()
        parked = ParkedReads(lambda transport, request_id, result, follow: answers.append((request_id, result)))
        await scenario(Purgatory(closed, parked), closed, parked)
    asyncio.run(main())
    return answers


async def turns(n: int = 5) -> None:
    """Let the loop run the tasks that are ready (no time passes)."""
    for _ in range(n):
        await asyncio.sleep(0)


async def waiting(awaitable) -> asyncio.Future:
    """`awaitable` under way, and run up to its wait."""
    future = asyncio.ensure_future(awaitable)
    await turns()
    assert not future.done()
    return future


def test_an_acks_all_append_answers_its_outcome_once_the_high_watermark_moves():
    async def scenario(purgatory, closed, parked):
        outcome = [None]
        append = await waiting(purgatory.await_replication(lambda: outcome[0], LONG_MS))
        assert purgatory.awaiting_replication == 1    # (a replica is not quiet meanwhile)
        purgatory.high_watermark_moved()              # not there yet: it waits on
        await turns()
        assert not append.done()
        outcome[0] = ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        purgatory.high_watermark_moved()
        assert await asyncio.wait_for(append, 5) is ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        assert purgatory.awaiting_replication == 0
    run(scenario)


def test_an_acks_all_append_times_out_or_ends_with_its_partition():
    async def scenario(purgatory, closed, parked):
        assert await asyncio.wait_for(purgatory.await_replication(lambda: None, 10), 5) is ErrorCode.REQUEST_TIMED_OUT
        append = await waiting(purgatory.await_replication(lambda: None, LONG_MS))
        closed.set()
        assert (await asyncio.wait_for(append, 5), purgatory.awaiting_replication) == (
            ErrorCode.NOT_LEADER_OR_FOLLOWER, 0)
    run(scenario)


def test_a_read_by_call_waits_for_data_and_keeps_what_it_read_if_its_partition_closes():
    async def scenario(purgatory, closed, parked):
        found = [EMPTY]
        read = await waiting(purgatory.await_data(lambda: found[0], LONG_MS, EMPTY))
        purgatory.data_arrived()                      # read again: still nothing
        await turns()
        assert not read.done()
        found[0] = DATA
        purgatory.data_arrived()
        assert await asyncio.wait_for(read, 5) == DATA
        closing = await waiting(purgatory.await_data(lambda: DATA, LONG_MS, EMPTY))
        closed.set()
        assert await asyncio.wait_for(closing, 5) == EMPTY   # (the next partition's data is not its)
        assert await purgatory.await_data(lambda: DATA, 10, EMPTY) == EMPTY   # closed: no wait
    run(scenario)


def test_a_wake_reaches_the_reads_parked_on_the_data_socket():
    async def scenario(purgatory, closed, parked):
        found = [EMPTY]
        parked.park(1, None, 7, lambda: found[0], EMPTY, LONG_MS)
        found[0] = DATA
        purgatory.high_watermark_moved()
    assert run(scenario) == [(7, DATA)]


def test_a_first_result_is_final_with_data_an_error_or_no_wait():
    assert is_final(DATA, 500) and is_final(FetchResult(ErrorCode.OFFSET_OUT_OF_RANGE), 500)
    assert is_final(EMPTY, 0) and not is_final(EMPTY, 500)
