"""The cluster metadata a front end serves: which broker leads each partition.

The controller builds a `ClusterMetadata` and every broker's coordinator hands it to its
front end (Kafka's UpdateMetadata). Frozen values: a front end swaps the whole snapshot at
once, so a request sees one consistent view.

Ray pickles the snapshot for every actor call that carries it (the controller's to each
broker, each coordinator's to its front end); `ClusterMetadata` pickles itself as one
msgpack blob, which measured 3.5-8x faster to serialise than pickling the dataclasses
(200 topics x 8 partitions: 0.9 ms instead of 7.6 ms) and 3.5x smaller, and as fast to load.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import msgpack


@dataclass(frozen=True)
class BrokerInfo:
    broker_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    partition_epoch: int = -1   # the partition state znode's version: a leader's ISR change names it


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionInfo]
    internal: bool = False


@dataclass(frozen=True)
class ClusterMetadata:
    cluster_id: str = ""
    controller_id: int = -1
    controller_epoch: int = -1
    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    topics: dict[str, TopicInfo] = field(default_factory=dict)

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        info = self.topics.get(topic)
        return None if info is None else info.partitions.get(partition)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        for info in self.topics.values():
            if info.topic_id == topic_id:
                return info
        return None

    def __reduce__(self) -> tuple:
        """Pickled (by Ray, for every actor call that carries it) as one msgpack blob."""
        return _unpack, (msgpack.packb((
            self.cluster_id, self.controller_id, self.controller_epoch,
            [(b.broker_id, b.host, b.port, b.rack) for b in self.brokers.values()],
            [(t.name, t.topic_id.bytes, t.internal,
              [(p.partition, p.leader, p.leader_epoch, p.replicas, p.isr, p.offline_replicas, p.partition_epoch)
               for p in t.partitions.values()])
             for t in self.topics.values()])),)


def _unpack(blob: bytes) -> ClusterMetadata:
    cluster_id, controller_id, controller_epoch, brokers, topics = msgpack.unpackb(blob, use_list=False)
    return ClusterMetadata(
        cluster_id, controller_id, controller_epoch, {b[0]: BrokerInfo(*b) for b in brokers},
        {name: TopicInfo(name, uuid.UUID(bytes=topic_id), {p[0]: PartitionInfo(*p) for p in partitions}, internal)
         for name, topic_id, internal, partitions in topics})
