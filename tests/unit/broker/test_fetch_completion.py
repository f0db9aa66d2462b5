"""A fetch over several partitions completes as Kafka's DelayedFetch does (`await_fetch`), against
real replicas on their Unix sockets (no Ray): once the partitions that answered hold min_bytes,
not when every partition has data or its wait ran out; the reads still parked are released, so
none answers later behind the fetch's back."""
from __future__ import annotations

import asyncio
from pathlib import Path

from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.net.data_plane import ReplicaChannel, await_fetch
from rafka.net.handlers import _reading_on
from rafka.partition_worker.replica_actor import PartitionReplica
from rafka.partition_worker.replica_state import LeaderAndIsr
from tests.unit.broker.test_replica_channel import BATCH_BYTES, CONFIG, batch

LEADER, FOLLOWER = 1, 2
LONG_WAIT_MS = 60_000      # far longer than any of these tests may take: a fetch that waits it out fails
PROMPTLY_S = 10.0


def run_with_leaders(short_dir: Path, scenario, partitions: int = 2, isr: tuple[int, ...] = (LEADER,)) -> None:
    """Run `scenario(replicas, channels)` with broker 1 leading partitions 0..n-1 of topic t,
    broker 2 an assigned follower (in the ISR only where `isr` says)."""
    async def main() -> None:
        replicas, channels = [], []
        for p in range(partitions):
            sock = str(short_dir / f"{p}.sock")
            replica = PartitionReplica(LEADER, TopicPartition("t", p), str(short_dir / "logs"), CONFIG, sock)
            assert replica.become(LeaderAndIsr(LEADER, 3, isr, (LEADER, FOLLOWER), 1)) is ErrorCode.NONE
            await replica.ready()
            replicas.append(replica)
            channels.append(ReplicaChannel(None, sock))
        try:
            await scenario(replicas, channels)
        finally:
            for channel in channels:
                channel.close()
            for replica in replicas:
                replica.close()
    asyncio.run(main())


async def append_soon(channel: ReplicaChannel, count: int = 1) -> None:
    await asyncio.sleep(0.05)   # the fetch is parked by now (ordering only; nothing waits on this time)
    for _ in range(count):
        assert (await channel.append(batch(), 1)).error is ErrorCode.NONE


def test_a_follower_fetch_answers_when_one_partition_has_data_not_when_all_do(short_dir):
    async def scenario(replicas, channels):
        reads = [c.start_replica_read(FOLLOWER, 3, 0, 1 << 20, LONG_WAIT_MS) for c in channels]
        writer = asyncio.ensure_future(append_soon(channels[1]))
        idle, busy = await asyncio.wait_for(await_fetch(reads, 1, LONG_WAIT_MS), PROMPTLY_S)
        await writer
        assert (idle.error, idle.regions) == (ErrorCode.NONE, ())
        assert busy.size == BATCH_BYTES and busy.next_offset == 3
        assert all(r.answer.done() for r in reads)   # the idle partition's read was released, not left parked
    run_with_leaders(short_dir, scenario)


def test_a_released_follower_read_never_answers_again_with_its_old_offset(short_dir):
    """The follower has offsets 0-2 of partition 0 and fetches at 3; once that fetch is
    answered, a later append must not make the leader think the follower went back."""
    async def scenario(replicas, channels):
        await append_soon(channels[0])
        first = await channels[0].replica_read(FOLLOWER, 3, 0, 1 << 20, 0)
        assert first.next_offset == 3
        reads = [c.start_replica_read(FOLLOWER, 3, o, 1 << 20, LONG_WAIT_MS) for c, o in zip(channels, (3, 0))]
        writer = asyncio.ensure_future(append_soon(channels[1]))
        await asyncio.wait_for(await_fetch(reads, 1, LONG_WAIT_MS), PROMPTLY_S)
        await writer
        assert (await channels[0].replica_read(FOLLOWER, 3, 3, 1 << 20, 0)).error is ErrorCode.NONE
        await append_soon(channels[0])                 # would wake a stale read at offset 0 if one were parked
        assert replicas[0].serving.state.followers[FOLLOWER].log_end_offset == 3
    run_with_leaders(short_dir, scenario, isr=(LEADER, FOLLOWER))


def test_a_consumer_fetch_waits_until_min_bytes_have_come_from_its_partitions(short_dir):
    async def scenario(replicas, channels):
        reads = [c.start_read(0, 1 << 20, LONG_WAIT_MS) for c in channels]
        fetch = asyncio.ensure_future(await_fetch(reads, 2 * BATCH_BYTES - 1, LONG_WAIT_MS))
        await append_soon(channels[0])                 # one batch: fewer than min_bytes
        await asyncio.sleep(0.05)
        assert not fetch.done()
        await append_soon(channels[1])                 # the second batch reaches min_bytes
        first, second = await asyncio.wait_for(fetch, PROMPTLY_S)
        assert first.size == second.size == BATCH_BYTES
    run_with_leaders(short_dir, scenario)


def test_a_fetch_with_a_failed_partition_answers_at_once(short_dir):
    async def scenario(replicas, channels):
        reads = [c.start_read(0, 1 << 20, LONG_WAIT_MS) for c in channels]
        answers = await asyncio.wait_for(await_fetch(reads, 1, LONG_WAIT_MS, complete_now=True), PROMPTLY_S)
        assert [a.regions for a in answers] == [(), ()]
    run_with_leaders(short_dir, scenario)


def test_a_fetch_whose_partitions_stay_empty_answers_after_max_wait(short_dir):
    async def scenario(replicas, channels):
        reads = [c.start_read(0, 1 << 20, 50) for c in channels]
        answers = await asyncio.wait_for(await_fetch(reads, 1, 50), PROMPTLY_S)
        assert [(a.error, a.regions) for a in answers] == [(ErrorCode.NONE, ())] * 2
    run_with_leaders(short_dir, scenario)


def test_a_consumer_fetch_short_of_min_bytes_reads_on_where_its_data_ended(short_dir):
    """One partition with one batch and min_bytes of two: the fetch waits for the second
    batch (Kafka's DelayedFetch counts what arrives meanwhile) and answers both, in order."""
    async def scenario(replicas, channels):
        await append_soon(channels[0])
        read_on = _reading_on([({"partition_max_bytes": 1 << 20}, channels[0])], LONG_WAIT_MS)
        fetch = asyncio.ensure_future(await_fetch([channels[0].start_read(0, 1 << 20, LONG_WAIT_MS)],
                                                  2 * BATCH_BYTES, LONG_WAIT_MS, read_on=read_on))
        await asyncio.sleep(0.05)
        assert not fetch.done()
        await append_soon(channels[0])
        (answer,) = await asyncio.wait_for(fetch, PROMPTLY_S)
        assert answer.size == 2 * BATCH_BYTES and answer.next_offset == 6
        assert [(r.position, r.length) for r in answer.regions] == [(0, BATCH_BYTES), (BATCH_BYTES, BATCH_BYTES)]
    run_with_leaders(short_dir, scenario, partitions=1)


def test_a_consumer_fetch_short_of_min_bytes_answers_what_it_has_at_max_wait(short_dir):
    async def scenario(replicas, channels):
        await append_soon(channels[0])
        read_on = _reading_on([({"partition_max_bytes": 1 << 20}, channels[0])], 200)
        (answer,) = await asyncio.wait_for(
            await_fetch([channels[0].start_read(0, 1 << 20, 200)], 2 * BATCH_BYTES, 200, read_on=read_on), PROMPTLY_S)
        assert answer.size == BATCH_BYTES and answer.next_offset == 3
    run_with_leaders(short_dir, scenario, partitions=1)


async def read_to_the_end(channels) -> None:
    """One batch (offsets 0-2) in each partition, read: each channel has seen the high watermark 3."""
    for channel in channels:
        await append_soon(channel)
        assert (await channel.read(0, 1 << 20)).high_watermark == 3


def test_a_consumer_read_parked_at_the_end_is_left_for_the_next_fetch_at_its_offset(short_dir):
    """A consumer at the end of two partitions: data on one answers the fetch; the other's
    read stays parked (its partition answers no data at the high watermark) and the next fetch
    at that offset takes it over, answered by the next append there."""
    async def scenario(replicas, channels):
        await read_to_the_end(channels)
        reads = [c.start_read(3, 1 << 20, LONG_WAIT_MS) for c in channels]
        writer = asyncio.ensure_future(append_soon(channels[1]))
        idle, busy = await asyncio.wait_for(await_fetch(reads, 1, LONG_WAIT_MS), PROMPTLY_S)
        await writer
        assert (idle.error, idle.regions, idle.high_watermark) == (ErrorCode.NONE, (), 3)
        assert busy.size == BATCH_BYTES and not reads[0].answer.done()
        again = channels[0].start_read(3, 1 << 20, LONG_WAIT_MS)
        assert again.answer is reads[0].answer and again.reused
        writer = asyncio.ensure_future(append_soon(channels[0]))
        (answer,) = await asyncio.wait_for(await_fetch([again], 1, LONG_WAIT_MS), PROMPTLY_S)
        await writer
        assert answer.size == BATCH_BYTES and answer.next_offset == 6
    run_with_leaders(short_dir, scenario)


def test_a_read_left_parked_is_released_when_the_next_fetch_reads_elsewhere(short_dir):
    async def scenario(replicas, channels):
        await read_to_the_end(channels)
        reads = [c.start_read(3, 1 << 20, LONG_WAIT_MS) for c in channels]
        writer = asyncio.ensure_future(append_soon(channels[1]))
        await asyncio.wait_for(await_fetch(reads, 1, LONG_WAIT_MS), PROMPTLY_S)
        await writer
        assert not reads[0].answer.done()
        elsewhere = channels[0].start_read(0, 1 << 20, LONG_WAIT_MS)   # a consumer that seeks back
        assert elsewhere.answer is not reads[0].answer
        released = await asyncio.wait_for(reads[0].answer, PROMPTLY_S)
        assert (released.error, released.regions) == (ErrorCode.NONE, ())
        assert (await asyncio.wait_for(elsewhere.answer, PROMPTLY_S)).size == BATCH_BYTES
    run_with_leaders(short_dir, scenario)


def test_a_reused_read_whose_wait_ran_out_is_followed_by_a_read_of_the_fetch_itself(short_dir):
    """The read left parked waits as long as the fetch that started it asked (100 ms); the next
    fetch waits longer: when the old wait runs out, it waits on with a read of its own, and
    data that arrives after still answers it before its own max wait."""
    async def scenario(replicas, channels):
        await read_to_the_end(channels)
        reads = [c.start_read(3, 1 << 20, 100) for c in channels]
        writer = asyncio.ensure_future(append_soon(channels[1]))
        await asyncio.wait_for(await_fetch(reads, 1, 100), PROMPTLY_S)
        await writer
        read_on = _reading_on([({"fetch_offset": 3, "partition_max_bytes": 1 << 20}, channels[0])], LONG_WAIT_MS)
        again = channels[0].start_read(3, 1 << 20, LONG_WAIT_MS)
        assert again.reused
        fetch = asyncio.ensure_future(await_fetch([again], 1, LONG_WAIT_MS, read_on=read_on))
        await asyncio.wait_for(again.answer, PROMPTLY_S)             # its 100 ms ran out
        await asyncio.sleep(0.05)
        assert not fetch.done()
        await append_soon(channels[0])
        (answer,) = await asyncio.wait_for(fetch, PROMPTLY_S)
        assert answer.size == BATCH_BYTES and answer.next_offset == 6
    run_with_leaders(short_dir, scenario)


def test_a_consumer_that_caught_up_finds_its_next_read_already_waiting_at_the_replica(short_dir):
    """A read answered with everything up to the high watermark is followed: the replica parks
    the same read at the next offset, so the consumer's next fetch there sends no read of its
    own, and the next append answers it (and is followed again)."""
    async def scenario(replicas, channels):
        await read_to_the_end(channels)
        (first,) = [channels[0].start_read(3, 1 << 20, LONG_WAIT_MS)]
        writer = asyncio.ensure_future(append_soon(channels[0]))
        (answer,) = await asyncio.wait_for(await_fetch([first], 1, LONG_WAIT_MS), PROMPTLY_S)
        await writer
        assert (answer.next_offset, answer.high_watermark) == (6, 6)
        assert len(replicas[0].serving.data_server.parked) == 1            # its follow read, at offset 6
        followed = channels[0].start_read(6, 1 << 20, LONG_WAIT_MS)
        assert followed.reused and not followed.answer.done()
        writer = asyncio.ensure_future(append_soon(channels[0], 2))
        (answer,) = await asyncio.wait_for(await_fetch([followed], 1, LONG_WAIT_MS), PROMPTLY_S)
        await writer
        assert answer.size >= BATCH_BYTES and answer.next_offset in (9, 12)
        # the follow read followed itself: the next read at its end waits at the replica already,
        # or (both appends read at once) finds the second batch there
        after = channels[0].start_read(answer.next_offset, 1 << 20, LONG_WAIT_MS)
        assert after.reused
    run_with_leaders(short_dir, scenario, partitions=1)


def test_a_follow_read_not_taken_leaves_other_offsets_a_read_of_their_own(short_dir):
    """A consumer that seeks back after catching up gets its own read; the follow read stays
    for a consumer at the end, and answers the next append there."""
    async def scenario(replicas, channels):
        await read_to_the_end(channels)
        first = channels[0].start_read(3, 1 << 20, LONG_WAIT_MS)
        writer = asyncio.ensure_future(append_soon(channels[0]))
        await asyncio.wait_for(await_fetch([first], 1, LONG_WAIT_MS), PROMPTLY_S)
        await writer
        back = channels[0].start_read(0, 1 << 20, LONG_WAIT_MS)
        assert not back.reused
        assert (await asyncio.wait_for(back.answer, PROMPTLY_S)).next_offset == 6
        at_end = channels[0].start_read(6, 1 << 20, LONG_WAIT_MS)
        assert at_end.reused
        writer = asyncio.ensure_future(append_soon(channels[0]))
        (answer,) = await asyncio.wait_for(await_fetch([at_end], 1, LONG_WAIT_MS), PROMPTLY_S)
        await writer
        assert answer.size == BATCH_BYTES and answer.next_offset == 9
    run_with_leaders(short_dir, scenario, partitions=1)


def test_a_read_with_no_wait_is_never_followed(short_dir):
    async def scenario(replicas, channels):
        await read_to_the_end(channels)
        await append_soon(channels[0])
        assert (await channels[0].read(3, 1 << 20)).next_offset == 6   # max wait 0: answered at once
        assert len(replicas[0].serving.data_server.parked) == 0
        assert not channels[0].start_read(6, 1 << 20, LONG_WAIT_MS).reused
    run_with_leaders(short_dir, scenario, partitions=1)
