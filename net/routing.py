"""Request routing by leader metadata: which local replica answers a partition's request.

A front end serves only partitions whose leader replica is on its own broker; for any other
partition the client gets NOT_LEADER_OR_FOLLOWER and refreshes its metadata (Kafka's rule:
front ends never forward data to another broker). Whether this broker leads a partition is
what its replicas were told (LeaderAndIsr), not its metadata cache, as in Kafka's
ReplicaManager: the leader serves a new partition as soon as it leads it, even before its
own metadata (UpdateMetadata, which comes after) lists it.

The metadata names a new partition's leader before its replica process has started (0.3 s
idle, seconds in a burst); a request that reaches the leader meanwhile waits for the replica
(`once_started`), bounded, rather than be refused, so a client that sees a partition can use it.
"""
from __future__ import annotations

import asyncio
from typing import Any, Protocol

from rafka.common.errors import ErrorCode
from rafka.common.metadata import ClusterMetadata
from rafka.common.types import TopicPartition
from rafka.net.starting_leaders import StartingLeaders

# A request without a timeout of its own (ListOffsets, OffsetForLeaderEpoch) waits this long
# at most for a starting replica: below every client's default request timeout (30 s and up).
STARTING_WAIT_MS = 10_000


class LeaderLookup(Protocol):
    broker_id: int
    metadata: ClusterMetadata
    starting: StartingLeaders

    def channel(self, tp: TopicPartition) -> Any | None:
        """The `ReplicaChannel` of the local leader of `tp`, or None."""


def leader_channel(services: LeaderLookup, topic: str, partition: int) -> tuple[ErrorCode, Any]:
    """(NONE, channel) when this broker leads the partition and its replica runs here;
    otherwise the error to answer and None."""
    channel = services.channel(TopicPartition(topic, partition))
    if channel is not None:
        return ErrorCode.NONE, channel
    info = services.metadata.topics.get(topic)
    if info is None or partition not in info.partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    return ErrorCode.NOT_LEADER_OR_FOLLOWER, None


async def once_started(services: LeaderLookup, topic: str, partition: int, deadline: float) -> tuple[ErrorCode, Any]:
    """After `leader_channel` answered NOT_LEADER_OR_FOLLOWER: when this broker leads the
    partition and its replica still starts, wait for it until `deadline` (event-loop time);
    (NONE, channel) once it runs, else NOT_LEADER_OR_FOLLOWER, which clients retry."""
    tp = TopicPartition(topic, partition)
    if tp in services.starting:
        channel = await services.starting.wait(tp, services.channel, deadline - asyncio.get_running_loop().time())
        if channel is not None:
            return ErrorCode.NONE, channel
    return ErrorCode.NOT_LEADER_OR_FOLLOWER, None
