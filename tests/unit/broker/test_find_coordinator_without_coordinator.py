"""FindCoordinator while the broker's coordinator actor is gone (a broker stopping or
restarting): the front end cannot create `__consumer_offsets`, so the answer is the
retriable COORDINATOR_NOT_AVAILABLE, not a closed connection."""
from __future__ import annotations

import asyncio

from ray.exceptions import ActorDiedError

from rafka.common.errors import ErrorCode
from rafka.net.frontend_actor import Frontend
from rafka.net.group_handlers import GroupApis, RequestContext


class _GoneMethod:
    """A method of an actor that was killed: every call fails as Ray's handle does."""

    def remote(self, *_args, **_kwargs):
        async def fail():
            raise ActorDiedError()
        return fail()


class _GoneCoordinator:
    def __getattr__(self, _name: str) -> _GoneMethod:
        return _GoneMethod()


def test_find_coordinator_answers_coordinator_not_available() -> None:
    async def scenario() -> tuple[dict, dict]:
        frontend = Frontend(0, "127.0.0.1", 0, _GoneCoordinator())
        apis = GroupApis(frontend)
        context = RequestContext("test", "/127.0.0.1")
        v3 = await apis.find_coordinator(3, {"key": "g", "key_type": 0}, context)
        v4 = await apis.find_coordinator(4, {"coordinator_keys": ["g", "h"], "key_type": 0}, context)
        return v3, v4

    v3, v4 = asyncio.run(scenario())
    assert v3["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE and v3["node_id"] == -1
    assert [c["error_code"] for c in v4["coordinators"]] == [ErrorCode.COORDINATOR_NOT_AVAILABLE] * 2


def test_find_coordinator_waits_out_an_offsets_partition_whose_replica_still_starts() -> None:
    """The metadata names this broker as the partition's leader at once; while its replica
    starts, FindCoordinator answers COORDINATOR_NOT_AVAILABLE (clients ask again) rather than
    send them to a coordinator that cannot take their commits yet."""
    import uuid

    from rafka.common.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
    from rafka.common.types import TopicPartition
    from rafka.coordinator.group.group_coordinator import OFFSETS_TOPIC

    async def scenario() -> tuple[dict, dict]:
        frontend = Frontend(0, "127.0.0.1", 0, _GoneCoordinator())
        partitions = {p: PartitionInfo(p, 0, 0, (0,), (0,)) for p in range(frontend.groups.settings.partitions)}
        metadata = ClusterMetadata("c", 0, 1, {0: BrokerInfo(0, "127.0.0.1", 9092)},
                                   {OFFSETS_TOPIC: TopicInfo(OFFSETS_TOPIC, uuid.uuid4(), partitions, internal=True)})
        apis = GroupApis(frontend)
        context = RequestContext("test", "/127.0.0.1")
        group_partition = TopicPartition(OFFSETS_TOPIC, frontend.groups.partition_for("g"))
        frontend.update_metadata(metadata, {}, {}, frozenset({group_partition}))
        starting = await apis.find_coordinator(3, {"key": "g", "key_type": 0}, context)
        frontend.update_metadata(metadata, {}, {}, frozenset())   # started (elsewhere now: no local leader)
        started = await apis.find_coordinator(3, {"key": "g", "key_type": 0}, context)
        await frontend.groups.stop()
        return starting, started

    starting, started = asyncio.run(scenario())
    assert (starting["error_code"], starting["node_id"]) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)
    assert (started["error_code"], started["node_id"]) == (ErrorCode.NONE, 0)



def test_find_coordinator_wakes_a_resting_offsets_partition() -> None:
    """rafka rests idle replicas, and a new offsets topic's partitions rest until written: a
    lookup of a group whose offsets partition rests here names this broker and wakes it, so
    that the group's first writes find it running."""
    import uuid

    from rafka.common.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
    from rafka.common.types import TopicPartition
    from rafka.coordinator.group.group_coordinator import OFFSETS_TOPIC

    async def scenario() -> tuple[dict, list]:
        frontend = Frontend(0, "127.0.0.1", 0, _GoneCoordinator())
        woken: list = []
        frontend._wake_replica = woken.append   # (the channels made next ask through it)
        partitions = {p: PartitionInfo(p, 0, 0, (0,), (0,)) for p in range(frontend.groups.settings.partitions)}
        metadata = ClusterMetadata("c", 0, 1, {0: BrokerInfo(0, "127.0.0.1", 9092)},
                                   {OFFSETS_TOPIC: TopicInfo(OFFSETS_TOPIC, uuid.uuid4(), partitions, internal=True)})
        group_partition = TopicPartition(OFFSETS_TOPIC, frontend.groups.partition_for("g"))
        frontend.update_metadata(metadata, {}, {}, frozenset(), {group_partition: None})
        resting = await GroupApis(frontend).find_coordinator(3, {"key": "g", "key_type": 0},
                                                            RequestContext("test", "/127.0.0.1"))
        await frontend.groups.stop()
        return resting, woken

    resting, woken = asyncio.run(scenario())
    assert (resting["error_code"], resting["node_id"]) == (ErrorCode.NONE, 0)
    assert len(woken) == 1 and woken[0].topic == "__consumer_offsets"
