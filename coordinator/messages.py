"""Values exchanged with a `BrokerCoordinator` actor (frozen, cheap to pickle)."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from rafka.common.errors import ErrorCode


@dataclass(frozen=True)
class TopicSpec:
    """A CreateTopics entry; -1 partitions or replication factor means the broker default."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: dict[int, tuple[int, ...]] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TopicResult:
    name: str
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    topic_id: uuid.UUID = uuid.UUID(int=0)
    num_partitions: int = -1
    replication_factor: int = -1
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PartitionsSpec:
    """A CreatePartitions entry: grow topic `name` to `count` partitions, placed by the broker
    or (`assignments`, one replica list per new partition, in partition order) by the client."""

    name: str
    count: int
    assignments: tuple[tuple[int, ...], ...] | None = None
