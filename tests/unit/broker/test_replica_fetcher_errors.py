"""How a follower's fetcher takes a leader's error for one partition (Kafka's fetcher rules):
only FENCED_LEADER_EPOCH waits for new metadata; a transient answer backs off and retries."""
from __future__ import annotations

import asyncio

import pytest

from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.net import replica_fetcher as rf


def answer(error: ErrorCode) -> dict:
    return {"error_code": int(error), "partition_index": 0, "high_watermark": -1, "log_start_offset": -1,
            "records": None}


async def take(error: ErrorCode) -> tuple[rf.FollowedPartition, float]:
    fetcher = rf.ReplicaFetcher(1, 0, "127.0.0.1", 1)
    try:
        p = rf.FollowedPartition(TopicPartition("t", 0), leader_epoch=3, channel=None, fetch_offset=10,
                                 truncating=False)
        now = asyncio.get_running_loop().time()
        await fetcher._take(p, answer(error))
        return p, now
    finally:
        fetcher.stop()


def test_a_fenced_epoch_waits_for_new_metadata():
    p, _ = asyncio.run(take(ErrorCode.FENCED_LEADER_EPOCH))
    assert p.fenced


@pytest.mark.parametrize("error", [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                   ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.UNKNOWN_SERVER_ERROR])
def test_a_transient_answer_backs_off_and_keeps_its_place(error):
    p, before = asyncio.run(take(error))
    assert not p.fenced and p.fetch_offset == 10
    assert p.retry_at >= before + rf.FETCH_BACKOFF_S


def test_a_follower_on_a_failed_log_dir_stops_fetching_until_new_metadata():
    """Its own append answers KAFKA_STORAGE_ERROR: no truncation, no retry loop; the controller,
    told by the broker, sends new metadata (a new leader epoch) before it is fetched again."""
    from rafka.partition_worker.messages import FollowerAppendResult

    class Channel:
        async def follower_append(self, records, high_watermark, log_start_offset):
            return FollowerAppendResult(ErrorCode.KAFKA_STORAGE_ERROR, 10, 5)

    async def go() -> rf.FollowedPartition:
        fetcher = rf.ReplicaFetcher(1, 0, "127.0.0.1", 1)
        try:
            p = rf.FollowedPartition(TopicPartition("t", 0), leader_epoch=3, channel=Channel(), fetch_offset=10,
                                     truncating=False)
            await fetcher._take(p, {**answer(ErrorCode.NONE), "records": b"x", "high_watermark": 12})
            return p
        finally:
            fetcher.stop()

    p = asyncio.run(go())
    assert p.fenced and not p.truncating and p.fetch_offset == 10


def test_a_follower_whose_log_dir_failed_is_not_fetched_for_under_a_new_epoch():
    """New metadata (a new leader) lifts the fence; the follower's log dir is still offline,
    so it stops again before asking the leader anything (its one fetch would make the new
    leader count it caught up and hold acks=all produces for it)."""
    from rafka.partition_worker.messages import ReplicaStatus

    class Remote:
        def __init__(self, value):
            self.value = value

        def remote(self):
            future = asyncio.get_running_loop().create_future()
            future.set_result(self.value)
            return future

    class Actor:
        status = Remote(ReplicaStatus("t", 0, 1, 0, 4, 0, 127, 127, 1, log_offline=True))
        latest_leader_epoch = Remote(3)

    class Channel:
        actor = Actor()

    async def go() -> rf.FollowedPartition:
        fetcher = rf.ReplicaFetcher(1, 0, "127.0.0.1", 1)   # port 1: any request would fail
        try:
            p = rf.FollowedPartition(TopicPartition("t", 0), leader_epoch=4, channel=Channel())
            await fetcher._truncate([p])
            return p
        finally:
            fetcher.stop()

    p = asyncio.run(go())
    assert p.fenced and p.truncating and p.fetch_offset == -1
