"""Kafka's ZooKeeper paths (`kafka.zk.*ZNode.path`), and the persistent ones a broker creates
at startup. Pure: strings only."""
from __future__ import annotations

__all__ = [
    "CLUSTER_PATH", "CLUSTER_ID_PATH", "BROKERS_PATH", "BROKER_IDS_PATH", "BROKER_TOPICS_PATH",
    "BROKER_SEQID_PATH", "CONTROLLER_PATH", "CONTROLLER_EPOCH_PATH", "CONFIG_PATH", "CONFIG_TOPICS_PATH",
    "CONFIG_CHANGES_PATH", "CONFIG_CHANGE_PREFIX", "ADMIN_PATH", "DELETE_TOPICS_PATH",
    "REASSIGN_PARTITIONS_PATH", "PREFERRED_REPLICA_ELECTION_PATH", "ISR_CHANGE_NOTIFICATION_PATH",
    "ISR_CHANGE_PREFIX", "LOG_DIR_EVENT_NOTIFICATION_PATH", "LOG_DIR_EVENT_PREFIX", "OFFLINE_REPLICAS_PATH",
    "LATEST_PRODUCER_ID_BLOCK_PATH", "CONSUMERS_PATH", "FEATURE_PATH", "CONFIG_ENTITY_TYPES",
    "PERSISTENT_PATHS", "broker_path", "offline_replicas_path", "topic_path", "topic_partitions_path",
    "partition_path", "partition_state_path", "topic_config_path", "delete_topic_path",
]

# ---- paths (kafka.zk.*ZNode.path) --------------------------------------------------------
CLUSTER_PATH = "/cluster"
CLUSTER_ID_PATH = "/cluster/id"
BROKERS_PATH = "/brokers"
BROKER_IDS_PATH = "/brokers/ids"
BROKER_TOPICS_PATH = "/brokers/topics"
BROKER_SEQID_PATH = "/brokers/seqid"
CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
CONFIG_PATH = "/config"
CONFIG_TOPICS_PATH = "/config/topics"
CONFIG_CHANGES_PATH = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
ADMIN_PATH = "/admin"
DELETE_TOPICS_PATH = "/admin/delete_topics"
REASSIGN_PARTITIONS_PATH = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION_PATH = "/admin/preferred_replica_election"
ISR_CHANGE_NOTIFICATION_PATH = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
LOG_DIR_EVENT_NOTIFICATION_PATH = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
# rafka's own: the replicas each broker reports offline (not Kafka's; see encode_offline_replicas)
OFFLINE_REPLICAS_PATH = "/brokers/offline_replicas"
LATEST_PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"
CONSUMERS_PATH = "/consumers"
FEATURE_PATH = "/feature"

# Config entity types Kafka keeps under /config (ConfigType.ALL).
CONFIG_ENTITY_TYPES = ("topics", "clients", "users", "brokers", "ips")

# Persistent paths a Kafka broker creates at startup (ZkData.PersistentZkPaths).
PERSISTENT_PATHS: tuple[str, ...] = (
    CONSUMERS_PATH,
    BROKER_IDS_PATH,
    BROKER_TOPICS_PATH,
    CONFIG_CHANGES_PATH,
    DELETE_TOPICS_PATH,
    BROKER_SEQID_PATH,
    ISR_CHANGE_NOTIFICATION_PATH,
    LATEST_PRODUCER_ID_BLOCK_PATH,
    LOG_DIR_EVENT_NOTIFICATION_PATH,
) + tuple(f"{CONFIG_PATH}/{t}" for t in CONFIG_ENTITY_TYPES)



def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS_PATH}/{broker_id}"


def offline_replicas_path(broker_id: int) -> str:
    return f"{OFFLINE_REPLICAS_PATH}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS_PATH}/{topic}"


def topic_partitions_path(topic: str) -> str:
    return f"{topic_path(topic)}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{topic_partitions_path(topic)}/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{partition_path(topic, partition)}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS_PATH}/{topic}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS_PATH}/{topic}"
