"""acks=all and followers' fetches against a real leader replica on its Unix socket (no Ray):
the produce purgatory waits for the high watermark, a follower's fetch moves it, and a
follower of another epoch or another partition is refused."""
from __future__ import annotations

import asyncio
import dataclasses

from rafka.common.errors import ErrorCode
from rafka.partition_worker.replica_state import LeaderAndIsr
from tests.unit.broker.test_replica_channel import BATCH_BYTES, CONFIG, batch, run_with_replica

LEADER, FOLLOWER = 1, 2


def run(short_dir, scenario, *, isr=(LEADER, FOLLOWER), min_insync=1) -> None:
    """`scenario(replica, channel)` with broker 1 leading at epoch 3, broker 2 following."""
    run_with_replica(short_dir, scenario, isr=isr, replicas=(LEADER, FOLLOWER),
                     config=dataclasses.replace(CONFIG, min_insync_replicas=min_insync))


async def settled(task: asyncio.Future, within_s: float = 0.2) -> bool:
    await asyncio.wait([task], timeout=within_s)
    return task.done()


def test_acks_all_waits_until_the_follower_fetched_past_the_batch(short_dir):
    async def scenario(replica, channel):
        produce = asyncio.ensure_future(channel.append(batch(), -1, 10_000))
        assert not await settled(produce)                      # parked: the follower has nothing
        first = await channel.replica_read(FOLLOWER, 3, 0, 1 << 20)
        assert first.error is ErrorCode.NONE and first.size == BATCH_BYTES   # past the high watermark
        assert first.high_watermark == 0 and not await settled(produce)
        moved = await channel.replica_read(FOLLOWER, 3, 3, 1 << 20)          # "I have offsets 0-2"
        assert moved.high_watermark == 3 and moved.regions == ()
        result = await produce
        assert result.error is ErrorCode.NONE and result.base_offset == 0
    run(short_dir, scenario)


def test_acks_all_times_out_with_the_records_kept(short_dir):
    async def scenario(replica, channel):
        result = await channel.append(batch(), -1, 200)
        assert result.error is ErrorCode.REQUEST_TIMED_OUT
        assert replica.status().log_end_offset == 3 and replica.status().high_watermark == 0
    run(short_dir, scenario)


def test_acks_one_and_a_leader_alone_in_the_isr_do_not_wait(short_dir):
    async def scenario(replica, channel):
        assert (await channel.append(batch(), 1)).error is ErrorCode.NONE
    run(short_dir, scenario)

    async def alone(replica, channel):
        assert (await asyncio.wait_for(channel.append(batch(), -1, 10_000), 2)).error is ErrorCode.NONE
    run(short_dir, alone, isr=(LEADER,))


def test_an_isr_shrinking_below_min_insync_fails_the_waiting_produce_after_append(short_dir):
    async def scenario(replica, channel):
        produce = asyncio.ensure_future(channel.append(batch(), -1, 10_000))
        assert not await settled(produce)
        replica.become(LeaderAndIsr(LEADER, 4, (LEADER,), (LEADER, FOLLOWER), 1))   # the follower dropped
        assert (await produce).error is ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        assert (await channel.append(batch(), -1, 10_000)).error is ErrorCode.NOT_ENOUGH_REPLICAS
    run(short_dir, scenario, min_insync=2)


def test_consumers_read_only_below_the_high_watermark_while_followers_read_to_the_end(short_dir):
    async def scenario(replica, channel):
        asyncio.ensure_future(channel.append(batch(), -1, 10_000))
        await asyncio.sleep(0)
        follower = await channel.replica_read(FOLLOWER, 3, 0, 1 << 20)
        assert follower.size == BATCH_BYTES
        consumer = await channel.read(0, 1 << 20)
        assert consumer.error is ErrorCode.NONE and consumer.regions == () and consumer.high_watermark == 0
    run(short_dir, scenario)


def test_a_parked_follower_fetch_is_answered_by_the_next_append(short_dir):
    async def scenario(replica, channel):
        parked = asyncio.ensure_future(channel.replica_read(FOLLOWER, 3, 0, 1 << 20, max_wait_ms=5000))
        assert not await settled(parked)
        assert (await channel.append(batch(), 1)).error is ErrorCode.NONE
        assert (await asyncio.wait_for(parked, 2)).size == BATCH_BYTES
    run(short_dir, scenario)


def test_followers_of_another_epoch_or_partition_are_refused(short_dir):
    async def scenario(replica, channel):
        assert (await channel.replica_read(FOLLOWER, 2, 0, 1024)).error is ErrorCode.FENCED_LEADER_EPOCH
        assert (await channel.replica_read(FOLLOWER, 4, 0, 1024)).error is ErrorCode.UNKNOWN_LEADER_EPOCH
        assert (await channel.replica_read(9, 3, 0, 1024)).error is ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (await channel.replica_read(FOLLOWER, 3, 50, 1024)).error is ErrorCode.OFFSET_OUT_OF_RANGE
    run(short_dir, scenario)
