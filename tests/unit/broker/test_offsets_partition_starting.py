"""The group coordinator's storage on the front end: a `__consumer_offsets` partition whose
replica still starts is owned (its groups load) and its reads and writes wait for the replica,
found however often the front end's channel table is replaced meanwhile."""
from __future__ import annotations

import asyncio
import uuid


from rafka.common.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
from rafka.common.types import TopicPartition
from rafka.coordinator.group.group_coordinator import OFFSETS_TOPIC
from rafka.net.frontend_actor import Frontend


def test_an_offsets_partition_still_starting_is_waited_for_and_found_once_it_runs() -> None:
    async def scenario() -> tuple[bool, str]:
        frontend = Frontend(0, "127.0.0.1", 0, coordinator=None)
        partitions = {p: PartitionInfo(p, 0, 0, (0,), (0,)) for p in range(2)}
        metadata = ClusterMetadata("c", 0, 1, {0: BrokerInfo(0, "127.0.0.1", 9092)},
                                   {OFFSETS_TOPIC: TopicInfo(OFFSETS_TOPIC, uuid.uuid4(), partitions, internal=True)})
        zero, one = TopicPartition(OFFSETS_TOPIC, 0), TopicPartition(OFFSETS_TOPIC, 1)
        frontend.update_metadata(metadata, {}, {}, frozenset({zero, one}))
        owned = frontend.groups.offsets_partitions.led()   # both load while starting
        waiting = asyncio.ensure_future(frontend._offsets_channel(0, 5))
        await asyncio.sleep(0.01)
        frontend.update_metadata(metadata, {one: (None, "/nonexistent/one.sock")}, {}, frozenset({zero}))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        frontend.update_metadata(metadata, {zero: (None, "/nonexistent/zero.sock"), one: (None, "/nonexistent/one.sock")},
                                 {}, frozenset())
        channel = await asyncio.wait_for(waiting, 5)
        await frontend.groups.stop()
        return owned == {0, 1}, channel.socket_path

    owned_both, path = asyncio.run(scenario())
    assert owned_both and path == "/nonexistent/zero.sock"
