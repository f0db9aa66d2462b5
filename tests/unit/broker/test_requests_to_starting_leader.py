"""A request that reaches the leader while its replica still starts (the metadata names the
leader at once, as Kafka's does) waits for the replica and then goes to it, in arrival order;
if the start fails it is answered NOT_LEADER_OR_FOLLOWER, which clients retry. The dispatcher
is driven through `handle` over a fake of our `BrokerServices` seam."""
from __future__ import annotations

import asyncio
import uuid

from rafka.common.errors import ErrorCode
from rafka.common.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
from rafka.common.types import TopicPartition
from rafka.net.handlers import LIST_OFFSETS, PRODUCE, RequestDispatcher
from rafka.net.protocol import codec
from rafka.net.starting_leaders import StartingLeaders
from rafka.partition_worker.messages import OffsetLookup, ProduceResult
from rafka.partition_worker.record_batch import Record, encode_batch

TP = TopicPartition("fresh", 0)


class RecordingChannel:
    """Records the order calls are queued in (the real channel queues them for its socket at call time)."""

    def __init__(self) -> None:
        self.appended: list[bytes] = []
        self.calls: list[str] = []

    def append(self, records, acks: int, timeout_ms: int):
        self.appended.append(bytes(records))
        self.calls.append("append")
        return self._done(ProduceResult(ErrorCode.NONE, base_offset=len(self.appended) - 1))

    def list_offset(self, timestamp: int, isolation_level: int = 0):
        self.calls.append("list_offset")
        return self._done(OffsetLookup(ErrorCode.NONE, -1, len(self.appended), 0))

    @staticmethod
    async def _done(result):
        return result


class StartingBroker:
    """Broker 0 leads `fresh-0` in its metadata; its replica starts when the test says."""

    broker_id = 0
    auto_create_topics = True

    def __init__(self) -> None:
        self.metadata = ClusterMetadata(brokers={0: BrokerInfo(0, "127.0.0.1", 9092)}, topics={
            "fresh": TopicInfo("fresh", uuid.uuid4(), {0: PartitionInfo(0, 0, 0, (0,), (0,))})})
        self.channels: dict[TopicPartition, RecordingChannel] = {}
        self.starting = StartingLeaders()
        self.starting.update({TP})

    def channel(self, tp: TopicPartition) -> RecordingChannel | None:
        return self.channels.get(tp)


def produce_frame(value: bytes, timeout_ms: int = 5000) -> bytes:
    batch = encode_batch([Record(0, 1_700_000_000_000, None, value)])
    return codec.encode_request(PRODUCE, 9, 1, "client", {
        "transactional_id": None, "acks": 1, "timeout_ms": timeout_ms,
        "topic_data": [{"name": "fresh", "partition_data": [{"index": 0, "records": batch}]}]})


def latest_offset_frame() -> bytes:
    return codec.encode_request(LIST_OFFSETS, 7, 2, "consumer", {
        "replica_id": -1, "isolation_level": 0,
        "topics": [{"name": "fresh", "partitions": [{"partition_index": 0, "current_leader_epoch": -1,
                                                     "timestamp": -1}]}]})


async def answer(dispatcher: RequestDispatcher, frame: bytes) -> dict:
    parts = await dispatcher.handle(memoryview(frame)[4:], "127.0.0.1:5555")
    body = codec.decode_response(PRODUCE, 9, b"".join(bytes(p) for p in parts))[1]
    return body["responses"][0]["partition_responses"][0]


async def latest_offset(dispatcher: RequestDispatcher) -> dict:
    parts = await dispatcher.handle(memoryview(latest_offset_frame())[4:], "127.0.0.1:5556")
    body = codec.decode_response(LIST_OFFSETS, 7, b"".join(bytes(p) for p in parts))[1]
    return body["topics"][0]["partitions"][0]


def test_a_produce_waits_for_the_starting_replica_and_two_keep_their_order():
    broker = StartingBroker()
    dispatcher = RequestDispatcher(broker)

    async def scenario():
        first = asyncio.ensure_future(answer(dispatcher, produce_frame(b"first")))
        second = asyncio.ensure_future(answer(dispatcher, produce_frame(b"second")))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not first.done() and not second.done()
        channel = broker.channels[TP] = RecordingChannel()
        broker.starting.update(set())   # the coordinator's next publish: TP runs now
        return await first, await second, channel

    first, second, channel = asyncio.run(scenario())
    assert (first["error_code"], first["base_offset"]) == (ErrorCode.NONE, 0)
    assert (second["error_code"], second["base_offset"]) == (ErrorCode.NONE, 1)
    assert [b"first" in a for a in channel.appended] == [True, False]
    assert b"second" in channel.appended[1]


def test_a_produce_for_a_replica_that_failed_to_start_is_answered_not_leader():
    broker = StartingBroker()

    async def scenario():
        waiting = asyncio.ensure_future(answer(RequestDispatcher(broker), produce_frame(b"x")))
        for _ in range(20):
            await asyncio.sleep(0)
        broker.starting.update(set())   # offline now: the metadata shows no leader
        return await asyncio.wait_for(waiting, 5)

    assert asyncio.run(scenario())["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_the_wait_ends_at_half_the_request_timeout_so_the_client_hears_before_it_gives_up():
    broker = StartingBroker()

    async def timed():
        loop = asyncio.get_running_loop()
        began = loop.time()
        reply = await asyncio.wait_for(answer(RequestDispatcher(broker), produce_frame(b"x", timeout_ms=1000)), 5)
        return reply, loop.time() - began

    reply, waited_s = asyncio.run(timed())
    assert reply["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert 0.45 <= waited_s < 1.0


def test_a_consumer_asking_the_latest_offset_before_a_produce_is_answered_before_it():
    """A consumer resetting to 'latest' whose ListOffsets came first must not be told an offset
    past the record produced after it (it would never read that record)."""
    broker = StartingBroker()
    dispatcher = RequestDispatcher(broker)

    async def scenario():
        lookup = asyncio.ensure_future(latest_offset(dispatcher))
        await asyncio.sleep(0)
        produced = asyncio.ensure_future(answer(dispatcher, produce_frame(b"after")))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not lookup.done() and not produced.done()
        channel = broker.channels[TP] = RecordingChannel()
        broker.starting.update(set())
        return await lookup, await produced, channel

    lookup, produced, channel = asyncio.run(scenario())
    assert channel.calls == ["list_offset", "append"]
    assert (lookup["error_code"], lookup["offset"]) == (ErrorCode.NONE, 0)
    assert (produced["error_code"], produced["base_offset"]) == (ErrorCode.NONE, 0)
