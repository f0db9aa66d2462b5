"""Metadata with auto-creation, as Kafka does it: an unknown topic is answered at once with
LEADER_NOT_AVAILABLE while the topic is created in the background, one creation per topic
however many requests ask for it; a failed creation is logged and tried again by the next
request. The dispatcher is driven through its `handle` with encoded frames, over a fake of
our own `BrokerServices` seam whose creations wait until the test lets them go."""
from __future__ import annotations

import asyncio
import logging
import uuid

from rafka.common.errors import ErrorCode
from rafka.common.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
from rafka.coordinator.messages import TopicResult, TopicSpec
from rafka.net.handlers import METADATA, RequestDispatcher
from rafka.net.protocol import codec

VERSION = 12


class SlowCreation:
    """Services whose `create_topics` waits on `gate`, then publishes the topic's metadata."""

    broker_id = 0
    auto_create_topics = True

    def __init__(self) -> None:
        self.metadata = ClusterMetadata(brokers={0: BrokerInfo(0, "127.0.0.1", 9092)})
        self.gate = asyncio.Event()
        self.calls: list[list[str]] = []
        self.fail_with: Exception | None = None

    async def create_topics(self, specs: list[TopicSpec], validate_only: bool, timeout_ms: int) -> list[TopicResult]:
        self.calls.append([s.name for s in specs])
        await self.gate.wait()
        if self.fail_with is not None:
            raise self.fail_with
        topics = dict(self.metadata.topics)
        for spec in specs:
            topics[spec.name] = TopicInfo(spec.name, uuid.uuid4(), {0: PartitionInfo(0, 0, 0, (0,), (0,))})
        self.metadata = ClusterMetadata(brokers=self.metadata.brokers, topics=topics)
        return [TopicResult(s.name, ErrorCode.NONE, None) for s in specs]


async def ask(dispatcher: RequestDispatcher, *topics: str, auto_create: bool = True) -> dict[str, int]:
    """Error code per topic of one Metadata v12 request; fails if the answer takes over 2 s."""
    frame = codec.encode_request(METADATA, VERSION, 7, "test", {
        "topics": [{"topic_id": None, "name": t} for t in topics], "allow_auto_topic_creation": auto_create,
        "include_topic_authorized_operations": False})
    parts = await asyncio.wait_for(dispatcher.handle(memoryview(frame)[4:], "127.0.0.1:5555"), 2)
    _, body = codec.decode_response(METADATA, VERSION, b"".join(bytes(p) for p in parts))
    return {t["name"]: t["error_code"] for t in body["topics"]}


async def settle(condition, timeout_s: float = 2.0) -> None:
    for _ in range(int(timeout_s / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not met")


def test_unknown_topic_is_answered_at_once_and_created_once_in_the_background() -> None:
    async def scenario() -> None:
        services = SlowCreation()
        dispatcher = RequestDispatcher(services)
        first = await ask(dispatcher, "fresh", "bad name!")
        assert first == {"fresh": ErrorCode.LEADER_NOT_AVAILABLE, "bad name!": ErrorCode.INVALID_TOPIC_EXCEPTION}
        for _ in range(5):  # clients retry while the topic is being made: no second creation
            assert await ask(dispatcher, "fresh") == {"fresh": ErrorCode.LEADER_NOT_AVAILABLE}
        assert services.calls == [["fresh"]]
        services.gate.set()
        await settle(lambda: "fresh" in services.metadata.topics)
        assert await ask(dispatcher, "fresh") == {"fresh": ErrorCode.NONE}
        assert services.calls == [["fresh"]]
        # Without auto-creation an unknown topic is unknown, and nothing is created.
        assert await ask(dispatcher, "other", auto_create=False) == {"other": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert services.calls == [["fresh"]]

    asyncio.run(scenario())


def test_failed_background_creation_is_logged_and_retried_by_the_next_request(caplog) -> None:
    async def scenario() -> None:
        services = SlowCreation()
        services.fail_with = ConnectionError("ZooKeeper connection lost")
        services.gate.set()
        dispatcher = RequestDispatcher(services)
        assert await ask(dispatcher, "doomed") == {"doomed": ErrorCode.LEADER_NOT_AVAILABLE}
        await settle(lambda: "could not auto-create topic doomed" in caplog.text)
        services.fail_with = None
        assert await ask(dispatcher, "doomed") == {"doomed": ErrorCode.LEADER_NOT_AVAILABLE}
        await settle(lambda: "doomed" in services.metadata.topics)
        assert services.calls == [["doomed"], ["doomed"]]
        assert await ask(dispatcher, "doomed") == {"doomed": ErrorCode.NONE}

    with caplog.at_level(logging.WARNING):
        asyncio.run(scenario())
