"""Request routing by leader metadata: which local replica answers a partition's request.

A front end serves only partitions whose leader replica is on its own broker; for any other
partition the client gets NOT_LEADER_OR_FOLLOWER and refreshes its metadata (Kafka's rule:
front ends never forward data to another broker). Whether this broker leads a partition is
what its replicas were told (LeaderAndIsr), not its metadata cache, as in Kafka's
ReplicaManager: the leader serves a new partition as soon as it leads it, even before its
own metadata (UpdateMetadata, which comes after) lists it.
"""
from __future__ import annotations

from typing import Any, Protocol

from rafka.common.errors import ErrorCode
from rafka.common.metadata import ClusterMetadata
from rafka.common.types import TopicPartition


class LeaderLookup(Protocol):
    broker_id: int
    metadata: ClusterMetadata

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
