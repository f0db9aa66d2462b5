"""Produce to an internal topic is refused, as Kafka refuses it: INVALID_TOPIC_EXCEPTION with
"Cannot append to internal topic <name>" per partition, and nothing reaches the replica. Only
the broker's own group coordinator writes `__consumer_offsets`, through its own path. The
dispatcher is driven through `handle` over a fake of our `BrokerServices` seam."""
from __future__ import annotations

import asyncio
import uuid

import pytest

from rafka.common.errors import ErrorCode
from rafka.common.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
from rafka.common.types import TopicPartition
from rafka.net.handlers import PRODUCE, RequestDispatcher
from rafka.net.protocol import codec
from rafka.partition_worker.messages import ProduceResult
from rafka.partition_worker.record_batch import Record, encode_batch


class RecordingChannel:
    def __init__(self) -> None:
        self.appended: list[bytes] = []

    async def append(self, records, acks: int, timeout_ms: int) -> ProduceResult:
        self.appended.append(bytes(records))
        return ProduceResult(ErrorCode.NONE, base_offset=len(self.appended) - 1)


class LocalLeaders:
    """Every partition of `topics` is led here, each with its own recording channel."""

    broker_id = 0
    auto_create_topics = True

    def __init__(self, *topics: str) -> None:
        self.metadata = ClusterMetadata(brokers={0: BrokerInfo(0, "127.0.0.1", 9092)}, topics={
            t: TopicInfo(t, uuid.uuid4(), {p: PartitionInfo(p, 0, 0, (0,), (0,)) for p in range(2)}, internal=True)
            for t in topics})
        self.channels = {TopicPartition(t, p): RecordingChannel() for t in topics for p in range(2)}

    def channel(self, tp: TopicPartition) -> RecordingChannel | None:
        return self.channels.get(tp)


def produce(dispatcher: RequestDispatcher, version: int, topics: dict[str, list[int]]) -> dict:
    batch = encode_batch([Record(0, 1_700_000_000_000, b"junk-key", b"junk-value")])
    frame = codec.encode_request(PRODUCE, version, 1, "hostile", {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": t, "partition_data": [{"index": p, "records": batch} for p in ps]}
                       for t, ps in topics.items()]})
    parts = asyncio.run(dispatcher.handle(memoryview(frame)[4:], "127.0.0.1:5555"))
    return codec.decode_response(PRODUCE, version, b"".join(bytes(p) for p in parts))[1]


@pytest.mark.parametrize("topic", ["__consumer_offsets", "__transaction_state"])
def test_produce_to_an_internal_topic_is_refused_per_partition(topic: str) -> None:
    services = LocalLeaders(topic)
    body = produce(RequestDispatcher(services), 9, {topic: [0, 1, 7]})
    answers = {p["index"]: p for p in body["responses"][0]["partition_responses"]}
    assert {i: p["error_code"] for i, p in answers.items()} == {
        0: ErrorCode.INVALID_TOPIC_EXCEPTION, 1: ErrorCode.INVALID_TOPIC_EXCEPTION,
        7: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}  # Kafka checks the partition exists first
    assert answers[0]["error_message"] == f"Cannot append to internal topic {topic}"
    assert answers[0]["base_offset"] == -1
    assert all(not c.appended for c in services.channels.values())


def test_an_ordinary_topic_in_the_same_request_is_still_written() -> None:
    services = LocalLeaders("__consumer_offsets", "orders")
    body = produce(RequestDispatcher(services), 3, {"__consumer_offsets": [0], "orders": [1]})
    codes = {r["name"]: r["partition_responses"][0]["error_code"] for r in body["responses"]}
    assert codes == {"__consumer_offsets": ErrorCode.INVALID_TOPIC_EXCEPTION, "orders": ErrorCode.NONE}
    assert len(services.channels[TopicPartition("orders", 1)].appended) == 1
    assert not services.channels[TopicPartition("__consumer_offsets", 0)].appended
