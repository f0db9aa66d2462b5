"""`AdminService.create_partitions` against a real ZooKeeper, without Ray: what it writes to
`/brokers/topics/<t>` and what it answers while there is no controller, for a topic queued for
deletion, when the metadata never shows the new partitions led, and when two requests grow
one topic at once (conditional writes: no partition is lost or numbered twice)."""
from __future__ import annotations

import asyncio
import json
import logging

import pytest

from rafka.common.config import BrokerConfig
from rafka.common.errors import ErrorCode
from rafka.common.metadata import ClusterMetadata, PartitionInfo, TopicInfo
from rafka.common.types import Endpoint
from rafka.coordinator.admin.admin_service import AdminService
from rafka.coordinator.messages import PartitionsSpec, TopicResult
from rafka.coordinator.zk import zk_data as zd
from rafka.coordinator.zk.zk_data import BrokerRegistration, TopicAssignment
from rafka.coordinator.zk.zk_store import ZkStore


class Metadata:
    """The broker's metadata as the admin service waits on it: fixed for a test."""

    def __init__(self, leaders: dict[str, int] | None = None) -> None:
        topics = {t: TopicInfo(t, zd.ZERO_UUID, {p: PartitionInfo(p, 0, 0, (0,), (0,)) for p in range(n)})
                  for t, n in (leaders or {}).items()}
        self.value = ClusterMetadata(topics=topics)

    async def wait(self, condition, timeout_ms: int) -> bool:  # noqa: ANN001 - AdminService's AwaitMetadata
        return condition(self.value)


@pytest.fixture
def zk(zk_connect):
    store = ZkStore(zk_connect, 6000).start()
    store.register_broker(BrokerRegistration(0, (Endpoint("PLAINTEXT", "127.0.0.1", 9092),)))
    store.register_broker(BrokerRegistration(1, (Endpoint("PLAINTEXT", "127.0.0.1", 9093),)))
    yield store
    store.stop()


def admin(zk: ZkStore, metadata: Metadata | None = None) -> AdminService:
    return AdminService(BrokerConfig.from_mapping({"broker.id": "0"}), zk, (metadata or Metadata()).wait,
                        logging.getLogger("test"))


def grow(service: AdminService, *specs: PartitionsSpec, validate_only: bool = False,
         timeout_ms: int = 1000) -> list[TopicResult]:
    return asyncio.run(service.create_partitions(list(specs), validate_only, timeout_ms))


def written(zk_raw, topic: str) -> dict[str, list[int]]:
    return json.loads(zk_raw.get(f"/brokers/topics/{topic}")[0])["partitions"]


def test_without_a_controller_nothing_is_written(zk, zk_raw):
    zk.create_topic(TopicAssignment("t", zd.new_kafka_uuid(), {0: (0,)}))
    assert grow(admin(zk), PartitionsSpec("t", 2)) == [TopicResult("t", ErrorCode.NOT_CONTROLLER)]
    assert written(zk_raw, "t") == {"0": [0]}


def test_new_partitions_join_the_znode_and_the_answer_waits_for_their_leaders(zk, zk_raw):
    zk.try_become_controller(0)
    topic_id = zd.new_kafka_uuid()
    zk.create_topic(TopicAssignment("t", topic_id, {0: (1, 0)}))
    assert grow(admin(zk, Metadata({"t": 3})), PartitionsSpec("t", 3)) == [TopicResult("t", num_partitions=3)]
    # Partition 0's leader is broker 1: the continued round robin starts there.
    assert written(zk_raw, "t") == {"0": [1, 0], "1": [0, 1], "2": [1, 0]}
    assert json.loads(zk_raw.get("/brokers/topics/t")[0])["topic_id"] == zd.uuid_to_kafka(topic_id)
    # Metadata that never shows partition 3 led: REQUEST_TIMED_OUT, with the partition written.
    assert grow(admin(zk, Metadata({"t": 3})), PartitionsSpec("t", 4, ((0, 1),))) == [
        TopicResult("t", ErrorCode.REQUEST_TIMED_OUT)]
    assert written(zk_raw, "t")["3"] == [0, 1]
    # validate_only writes nothing and answers at once.
    assert grow(admin(zk), PartitionsSpec("t", 9), validate_only=True) == [TopicResult("t", num_partitions=9)]
    assert len(written(zk_raw, "t")) == 4


def test_a_topic_queued_for_deletion_is_refused(zk, zk_raw):
    zk.try_become_controller(0)
    zk.create_topic(TopicAssignment("going", zd.new_kafka_uuid(), {0: (0,)}))
    zk.delete_topic("going")
    assert grow(admin(zk), PartitionsSpec("going", 2)) == [
        TopicResult("going", ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is queued for deletion.")]
    assert written(zk_raw, "going") == {"0": [0]}


def test_two_requests_growing_one_topic_at_once_lose_no_partition(zk, zk_connect, zk_raw):
    zk.try_become_controller(0)
    zk.create_topic(TopicAssignment("race", zd.new_kafka_uuid(), {0: (0,)}))
    other = ZkStore(zk_connect, 6000).start()
    try:
        async def both() -> list[list[TopicResult]]:
            first, second = admin(zk, Metadata({"race": 5})), admin(other, Metadata({"race": 5}))
            return await asyncio.gather(first.create_partitions([PartitionsSpec("race", 3)], False, 1000),
                                        second.create_partitions([PartitionsSpec("race", 5)], False, 1000))
        results = asyncio.run(both())
    finally:
        other.stop()
    assert sorted(written(zk_raw, "race"), key=int) == ["0", "1", "2", "3", "4"]
    codes = sorted(r.error for [r] in results)
    # 5 always lands; 3 lands first or finds 5 already there (refused, nothing lost).
    assert codes in ([ErrorCode.NONE, ErrorCode.NONE], [ErrorCode.NONE, ErrorCode.INVALID_PARTITIONS])
