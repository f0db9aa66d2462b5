"""The znodes through which brokers tell the controller what changed, encoded and decoded as
Kafka 3.9 does: ISR change notifications, log dir event notifications, and rafka's own
report of each broker's offline replicas. Pure functions."""
from __future__ import annotations

from typing import Iterable

from rafka.common.types import TopicPartition
from rafka.coordinator.zk.zk_json import dumps, loads
from rafka.coordinator.zk.zk_paths import (ISR_CHANGE_NOTIFICATION_PATH, LOG_DIR_EVENT_NOTIFICATION_PATH,
                                           OFFLINE_REPLICAS_PATH)

__all__ = [
    "encode_isr_change", "decode_isr_change",
    "LOG_DIR_FAILURE_EVENT", "REPLICAS_ONLINE_EVENT", "encode_log_dir_event", "decode_log_dir_event",
    "encode_offline_replicas", "decode_offline_replicas",
]


# ---- /isr_change_notification/isr_change_<seq> -------------------------------------------
def encode_isr_change(partitions: Iterable[TopicPartition]) -> bytes:
    return dumps({"version": 1, "partitions": [
        {"topic": tp.topic, "partition": tp.partition} for tp in sorted(set(partitions))]})


def decode_isr_change(data: bytes, what: str = ISR_CHANGE_NOTIFICATION_PATH) -> set[TopicPartition]:
    js = loads(data, what)
    return {TopicPartition(str(p["topic"]), int(p["partition"])) for p in js.get("partitions", [])}


# ---- /log_dir_event_notification/log_dir_event_<seq> -------------------------------------
LOG_DIR_FAILURE_EVENT = 1    # Kafka's LogDirEventNotificationSequenceZNode.LogDirFailureEvent
REPLICAS_ONLINE_EVENT = 2    # rafka's own: offline replicas of the broker run again (Kafka reads only "broker")


def encode_log_dir_event(broker_id: int, event: int = LOG_DIR_FAILURE_EVENT) -> bytes:
    """`{"version":1,"broker":1,"event":1}`: the broker's set of offline replicas changed; the
    controller learns which (Kafka asks with LeaderAndIsr; rafka reads `/brokers/offline_replicas/<id>`)."""
    return dumps({"version": 1, "broker": broker_id, "event": event})


def decode_log_dir_event(data: bytes) -> int:
    """The broker a log dir event names (Kafka's decoder reads only that field)."""
    return int(loads(data, LOG_DIR_EVENT_NOTIFICATION_PATH)["broker"])


# ---- /brokers/offline_replicas/<id> (rafka's own) ----------------------------------------
# Kafka's broker tells the controller its replicas on failed log dirs in LeaderAndIsr
# responses, and a failed dir stays failed until the broker restarts. A rafka replica is its
# own process, which dies and comes back alone, so each broker keeps its current set of
# offline replicas in this persistent znode, in the JSON of an ISR change notification; the
# controller reads every live broker's at each round, so no report is lost when it moves.
def encode_offline_replicas(partitions: Iterable[TopicPartition]) -> bytes:
    return encode_isr_change(partitions)


def decode_offline_replicas(data: bytes | None) -> frozenset[TopicPartition]:
    return frozenset(decode_isr_change(data, OFFLINE_REPLICAS_PATH)) if data else frozenset()
