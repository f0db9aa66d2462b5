"""The znodes of topics, encoded and decoded as Kafka 3.9 does: a topic's replica
assignment (`/brokers/topics/<t>`), each partition's leader and ISR (`.../partitions/<p>/state`),
its config overrides (`/config/topics/<t>`) and the config change notifications that announce
them. Pure functions and frozen values."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from rafka.coordinator.zk.zk_json import ZERO_UUID, dumps, loads, uuid_from_kafka, uuid_to_kafka
from rafka.coordinator.zk.zk_paths import topic_path

__all__ = [
    "NO_LEADER", "LEADER_RECOVERY_RECOVERED", "LEADER_RECOVERY_RECOVERING",
    "TopicAssignment", "encode_topic", "decode_topic",
    "PartitionState", "encode_partition_state", "decode_partition_state",
    "encode_topic_config", "decode_topic_config", "encode_config_change",
]

NO_LEADER = -1  # LeaderAndIsr.NO_LEADER
LEADER_RECOVERY_RECOVERED = 0  # LeaderRecoveryState.RECOVERED: not written to ZooKeeper
LEADER_RECOVERY_RECOVERING = 1  # after an unclean election (KIP-704)


# ---- /brokers/topics/<topic> -------------------------------------------------------------
@dataclass(frozen=True)
class TopicAssignment:
    """A topic's replica assignment: partition -> replicas, preferred leader first.

    `topic_id` is `ZERO_UUID` when the znode has none (topics created before Kafka 2.8).
    `adding_replicas`/`removing_replicas` are non-empty only during a reassignment (KIP-455).
    """

    topic: str
    topic_id: uuid.UUID
    partitions: dict[int, tuple[int, ...]]
    adding_replicas: dict[int, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: dict[int, tuple[int, ...]] = field(default_factory=dict)

    def replicas(self, partition: int) -> tuple[int, ...]:
        return self.partitions[partition]

    @property
    def replication_factor(self) -> int:
        return len(next(iter(self.partitions.values()), ()))


def encode_topic(assignment: TopicAssignment) -> bytes:
    """Kafka's `TopicZNode.encode`, version 3."""
    def as_json(m: Mapping[int, Iterable[int]]) -> dict[str, list[int]]:
        return {str(p): list(r) for p, r in sorted(m.items()) if list(r)}

    body: dict[str, Any] = {
        "partitions": {str(p): list(r) for p, r in sorted(assignment.partitions.items())},
        "topic_id": uuid_to_kafka(assignment.topic_id),
        "adding_replicas": as_json(assignment.adding_replicas),
        "removing_replicas": as_json(assignment.removing_replicas),
        "version": 3,
    }
    if assignment.topic_id == ZERO_UUID:
        del body["topic_id"]
    return dumps(body)


def decode_topic(topic: str, data: bytes) -> TopicAssignment:
    """Kafka's `TopicZNode.decode` (versions 1-3)."""
    js = loads(data, topic_path(topic))

    def as_map(key: str) -> dict[int, tuple[int, ...]]:
        return {int(p): tuple(int(r) for r in reps) for p, reps in (js.get(key) or {}).items()}

    topic_id = js.get("topic_id")
    return TopicAssignment(
        topic=topic,
        topic_id=uuid_from_kafka(topic_id) if topic_id else ZERO_UUID,
        partitions=dict(sorted(as_map("partitions").items())),
        adding_replicas=as_map("adding_replicas"),
        removing_replicas=as_map("removing_replicas"),
    )


# ---- /brokers/topics/<topic>/partitions/<p>/state ----------------------------------------
@dataclass(frozen=True)
class PartitionState:
    """Leader, ISR and epochs of one partition (`LeaderIsrAndControllerEpoch`).

    `zk_version` is the znode version this state was read at (-1: not in ZooKeeper yet);
    writes are conditional on it. `leader` is `NO_LEADER` (-1) when the partition is offline.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    leader_recovery_state: int = LEADER_RECOVERY_RECOVERED
    zk_version: int = -1


def encode_partition_state(state: PartitionState) -> bytes:
    """Kafka's `TopicPartitionStateZNode.encode`: version 1; `leader_recovery_state` only
    when it is not RECOVERED (0)."""
    body: dict[str, Any] = {
        "controller_epoch": state.controller_epoch,
        "leader": state.leader,
        "version": 1,
        "leader_epoch": state.leader_epoch,
        "isr": list(state.isr),
    }
    if state.leader_recovery_state != LEADER_RECOVERY_RECOVERED:
        body["leader_recovery_state"] = state.leader_recovery_state
    return dumps(body)


def decode_partition_state(data: bytes, zk_version: int = -1) -> PartitionState:
    js = loads(data, "partition state")
    return PartitionState(
        leader=int(js["leader"]),
        leader_epoch=int(js["leader_epoch"]),
        isr=tuple(int(r) for r in js["isr"]),
        controller_epoch=int(js["controller_epoch"]),
        leader_recovery_state=int(js.get("leader_recovery_state", LEADER_RECOVERY_RECOVERED)),
        zk_version=zk_version,
    )


# ---- /config/topics/<topic> --------------------------------------------------------------
def encode_topic_config(config: Mapping[str, Any]) -> bytes:
    """`{"version":1,"config":{"retention.ms":"1000"}}`: values are strings, as Java Properties."""
    return dumps({"version": 1, "config": {str(k): _config_str(v) for k, v in config.items()}})


def _config_str(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def decode_topic_config(data: bytes | None) -> dict[str, str]:
    if not data:
        return {}
    config = loads(data, "topic config").get("config") or {}
    return {str(k): str(v) for k, v in config.items()}


def encode_config_change(entity_path: str) -> bytes:
    """`/config/changes/config_change_<seq>`: `{"version":2,"entity_path":"topics/foo"}`."""
    return dumps({"version": 2, "entity_path": entity_path})
