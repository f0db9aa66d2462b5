"""Transactions at a real leader replica over its Unix socket (no Ray): a coordinator's
markers (acks=all, epochs checked, a retry answered NONE), read_committed reads up to the last
stable offset with the aborted transactions, and ListOffsets' latest offset per isolation."""
from __future__ import annotations

import asyncio
import dataclasses

import pytest

from rafka.common.errors import ErrorCode
from rafka.net.data_plane import ReplicaChannel
from rafka.partition_worker.messages import LATEST_TIMESTAMP, AbortedTransaction, FetchResult
from rafka.partition_worker.record_batch import Record, encode_batch
from tests.unit.broker.test_replica_channel import BATCH_BYTES, CONFIG, NOW, batch, run_with_replica

PID = 4000
LEADER, FOLLOWER = 1, 2
LONG_WAIT_MS = 60_000   # far longer than a test may take: a read that waits it out fails the test
MAX = 1 << 20


def txn_batch(seq: int, n: int = 2, epoch: int = 0) -> bytes:
    return encode_batch([Record(i, NOW, f"t{seq + i}".encode(), b"x" * 40) for i in range(n)],
                        producer_id=PID, producer_epoch=epoch, base_sequence=seq, is_transactional=True)


async def produce(channel: ReplicaChannel, records: bytes) -> int:
    result = await channel.append(records, 1)
    assert result.error is ErrorCode.NONE, result
    return result.base_offset


async def latest(channel: ReplicaChannel, isolation_level: int) -> int:
    lookup = await channel.list_offset(LATEST_TIMESTAMP, isolation_level)
    assert lookup.error is ErrorCode.NONE
    return lookup.offset


async def settled(future: asyncio.Future, within_s: float = 0.2) -> bool:
    await asyncio.wait([future], timeout=within_s)
    return future.done()


def offsets(result: FetchResult) -> tuple[int, int]:
    return result.next_offset, result.last_stable_offset


@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
def test_read_committed_stops_at_an_open_transaction_and_then_reads_it_with_its_outcome(short_dir, commit):
    async def scenario(replica, channel):
        await produce(channel, txn_batch(0))                        # 0-1, transaction open
        await produce(channel, batch())                             # 2-4, plain records after it
        uncommitted = await channel.read(0, MAX)
        assert (uncommitted.next_offset, uncommitted.high_watermark, uncommitted.last_stable_offset) == (5, 5, 0)
        assert uncommitted.aborted_transactions is None             # read_uncommitted reports none (null)
        committed = await channel.read(0, MAX, read_committed=True)
        assert (committed.regions, committed.high_watermark, committed.last_stable_offset) == ((), 5, 0)
        assert committed.aborted_transactions == ()
        assert (await latest(channel, 1), await latest(channel, 0)) == (0, 5)

        marker = await channel.write_txn_marker(PID, 0, 7, commit, 10_000)
        assert (marker.error, marker.base_offset) == (ErrorCode.NONE, 5)
        after = await channel.read(0, MAX, read_committed=True)
        assert offsets(after) == (6, 6)                             # the records and the marker
        assert after.aborted_transactions == (() if commit else (AbortedTransaction(PID, 0),))
        assert await latest(channel, 1) == 6
        assert (await channel.read(2, MAX, read_committed=True)).aborted_transactions == (
            () if commit else (AbortedTransaction(PID, 0),))        # its records before 2 are still aborted
    run_with_replica(short_dir, scenario)


def test_a_retried_marker_is_answered_none_and_stale_epochs_are_refused(short_dir):
    async def scenario(replica, channel):
        await produce(channel, txn_batch(0, epoch=1))
        assert (await channel.write_txn_marker(PID, 1, 5, True, 10_000)).error is ErrorCode.NONE
        retried = await channel.write_txn_marker(PID, 1, 5, True, 10_000)
        assert (retried.error, retried.base_offset) == (ErrorCode.NONE, 3)   # written again: it ends nothing
        assert offsets(await channel.read(0, MAX, read_committed=True)) == (4, 4)
        stale_producer = await channel.write_txn_marker(PID, 0, 5, False, 10_000)
        assert stale_producer.error is ErrorCode.INVALID_PRODUCER_EPOCH
        stale_coordinator = await channel.write_txn_marker(PID, 1, 4, False, 10_000)
        assert stale_coordinator.error is ErrorCode.TRANSACTION_COORDINATOR_FENCED
        assert replica.status().log_end_offset == 4                 # nothing written by a refusal
    run_with_replica(short_dir, scenario)


def test_a_read_committed_fetch_parked_at_the_last_stable_offset_answers_when_the_marker_comes(short_dir):
    async def scenario(replica, channel):
        await produce(channel, txn_batch(0))
        parked = asyncio.ensure_future(channel.read(0, MAX, LONG_WAIT_MS, read_committed=True))
        assert not await settled(parked)                            # nothing stable to read yet
        assert (await channel.write_txn_marker(PID, 0, 0, True, 10_000)).error is ErrorCode.NONE
        answer = await asyncio.wait_for(parked, 10)
        assert offsets(answer) == (3, 3) and answer.aborted_transactions == ()
    run_with_replica(short_dir, scenario)


def test_a_read_committed_read_is_never_served_from_a_read_uncommitted_window(short_dir):
    async def scenario(replica, channel):
        for _ in range(3):
            await produce(channel, batch())                         # 0-8
        await produce(channel, txn_batch(0))                        # 9-10, open
        first = await channel.read(0, BATCH_BYTES)                  # opens a window up to the high watermark
        assert first.committed_end > 0 and first.next_offset == 3
        committed = await channel.read(3, MAX, read_committed=True)
        assert offsets(committed) == (9, 9)                         # stops at the open transaction
        assert (await channel.read(3, MAX)).next_offset == 11       # read_uncommitted goes on past it
    run_with_replica(short_dir, scenario)


def test_a_marker_waits_for_the_followers_as_acks_all_does(short_dir):
    async def scenario(replica, channel):
        await produce(channel, txn_batch(0))
        caught_up = await channel.replica_read(FOLLOWER, 3, 0, MAX)
        assert caught_up.error is ErrorCode.NONE
        await channel.replica_read(FOLLOWER, 3, 2, MAX)             # the follower has 0-1
        marker = asyncio.ensure_future(channel.write_txn_marker(PID, 0, 0, False, 10_000))
        assert not await settled(marker)                            # parked: the follower lacks the marker
        assert (await channel.read(0, MAX, read_committed=True)).regions == ()   # not stable before the HW passes it
        await channel.replica_read(FOLLOWER, 3, 3, MAX)             # the follower has the marker too
        assert (await asyncio.wait_for(marker, 10)).error is ErrorCode.NONE
        assert offsets(await channel.read(0, MAX, read_committed=True)) == (3, 3)
    run_with_replica(short_dir, scenario, isr=(LEADER, FOLLOWER), replicas=(LEADER, FOLLOWER))


def test_a_marker_is_refused_below_min_insync_replicas(short_dir):
    async def scenario(replica, channel):
        await produce(channel, txn_batch(0))
        assert (await channel.write_txn_marker(PID, 0, 0, True, 10_000)).error is ErrorCode.NOT_ENOUGH_REPLICAS
        assert replica.status().log_end_offset == 2
    run_with_replica(short_dir, scenario, isr=(LEADER,), replicas=(LEADER, FOLLOWER),
                     config=dataclasses.replace(CONFIG, min_insync_replicas=2))


def test_read_committed_reads_of_a_partition_without_transactions_take_the_fast_paths(short_dir):
    """No transaction: every window is stable, so a read_committed consumer working through a
    backlog is served by the channel itself, and one at the end leaves a follow read parked."""
    async def scenario(replica, channel):
        for _ in range(3):
            await produce(channel, batch())                         # 0-8, one segment
        first = await channel.read(0, BATCH_BYTES, read_committed=True)
        assert first.stable_window and first.committed_end > 0
        await produce(channel, batch())                             # 9-11: a window does not know
        second = await channel.read(3, BATCH_BYTES, read_committed=True)
        assert (second.next_offset, second.high_watermark, second.aborted_transactions) == (6, 9, ())   # the window's
        assert (await channel.read(6, MAX, read_committed=True)).next_offset == 9   # the rest of the window
        at_end = await channel.read(9, MAX, 1000, read_committed=True)
        assert (at_end.next_offset, at_end.last_stable_offset) == (12, 12)
        following = channel.start_read(12, MAX, LONG_WAIT_MS, read_committed=True)
        assert following.reused                                     # the replica's follow read, parked already
        await produce(channel, txn_batch(0))                        # 12-13: not stable yet
        assert not await settled(following.answer)
        await channel.write_txn_marker(PID, 0, 0, True, 10_000)
        assert offsets(await asyncio.wait_for(following.answer, 10)) == (15, 15)
        assert channel.start_read(15, MAX, LONG_WAIT_MS).reused is False   # a read_uncommitted one is its own
    run_with_replica(short_dir, scenario)
