"""Kafka's ZooKeeper paths and znode JSON, exactly as Kafka 3.9 writes them (`kafka.zk.ZkData`).

Pure functions and frozen values: no kazoo, no I/O. `zk_store.py` does the reading and
writing. JSON is written compactly, as Jackson does (`{"version":1,...}`); decoders accept
every field Kafka may write and ignore the rest, so a rafka broker and a Kafka broker can
read each other's znodes.
"""
from __future__ import annotations

import base64
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from rafka.common.types import Endpoint, TopicPartition

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

NO_LEADER = -1  # LeaderAndIsr.NO_LEADER
LEADER_RECOVERY_RECOVERED = 0  # LeaderRecoveryState.RECOVERED: not written to ZooKeeper
LEADER_RECOVERY_RECOVERING = 1  # after an unclean election (KIP-704)
ZERO_UUID = uuid.UUID(int=0)  # Kafka's Uuid.ZERO_UUID: "no topic id"
_METADATA_TOPIC_ID = uuid.UUID(int=1)  # Uuid.METADATA_TOPIC_ID, never handed out


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


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def _loads(data: bytes | None, what: str) -> dict[str, Any]:
    try:
        value = json.loads((data or b"").decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"Failed to parse ZooKeeper data of {what}: {data!r}") from e
    if not isinstance(value, dict):
        raise ValueError(f"Failed to parse ZooKeeper data of {what}: {data!r}")
    return value


# ---- Kafka's Uuid: 16 bytes as unpadded URL-safe base64, 22 characters ------------------
def uuid_to_kafka(value: uuid.UUID) -> str:
    """Kafka's `Uuid.toString()`: `"MvDxzVmcRsaTz33bUuRU6A"`."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def uuid_from_kafka(text: str) -> uuid.UUID:
    """Inverse of `uuid_to_kafka` (Kafka's `Uuid.fromString`)."""
    if len(text) != 22:
        raise ValueError(f"Input string with prefix {text[:22]!r} is not a 22-character base64 Kafka Uuid")
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def new_kafka_uuid() -> uuid.UUID:
    """Kafka's `Uuid.randomUuid()`: never the zero or metadata id, never a string starting with '-'."""
    while True:
        value = uuid.uuid4()
        if value not in (ZERO_UUID, _METADATA_TOPIC_ID) and not uuid_to_kafka(value).startswith("-"):
            return value


def new_cluster_id() -> str:
    """A new cluster id, as Kafka generates it in ZooKeeper mode (22 base64url characters)."""
    return uuid_to_kafka(new_kafka_uuid())


# ---- /cluster/id -------------------------------------------------------------------------
def encode_cluster_id(cluster_id: str) -> bytes:
    """`{"version":"1","id":"..."}`: Kafka writes the version as a string here."""
    return _dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    return str(_loads(data, CLUSTER_ID_PATH)["id"])


# ---- /brokers/ids/<id> -------------------------------------------------------------------
@dataclass(frozen=True)
class BrokerRegistration:
    """What a broker writes to its ephemeral `/brokers/ids/<id>` (JSON version 5)."""

    broker_id: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None
    jmx_port: int = -1
    timestamp_ms: int = field(default=0, compare=False)

    def endpoint(self, listener: str) -> Endpoint | None:
        """The endpoint of `listener` (e.g. "PLAINTEXT"), or None."""
        return next((e for e in self.endpoints if e.listener == listener), None)


def _connection_string(e: Endpoint) -> str:
    host = f"[{e.host}]" if ":" in e.host else e.host  # Utils.formatAddress
    return f"{e.listener}://{host}:{e.port}"


def encode_broker(reg: BrokerRegistration, timestamp_ms: int | None = None) -> bytes:
    """Kafka's `BrokerIdZNode.encode`, version 5. `rack` is omitted when None; the top-level
    host/port are those of the first PLAINTEXT endpoint (null/-1 when there is none)."""
    plaintext = next((e for e in reg.endpoints if e.security_protocol == "PLAINTEXT"), None)
    ts = timestamp_ms if timestamp_ms is not None else (reg.timestamp_ms or int(time.time() * 1000))
    body: dict[str, Any] = {
        "features": {},
        "listener_security_protocol_map": {e.listener: e.security_protocol for e in reg.endpoints},
        "endpoints": [_connection_string(e) for e in reg.endpoints],
        "jmx_port": reg.jmx_port,
        "port": plaintext.port if plaintext else -1,
        "host": plaintext.host if plaintext else None,
        "version": 5,
        "timestamp": str(ts),
    }
    if reg.rack is not None:
        body["rack"] = reg.rack
    return _dumps(body)


_DEFAULT_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def decode_broker(broker_id: int, data: bytes) -> BrokerRegistration:
    """Kafka's `BrokerIdZNode.decode` for versions 1-5."""
    js = _loads(data, broker_path(broker_id))
    version = int(js.get("version", 0))
    if version < 1:
        raise ValueError(f"Unsupported version of broker registration: {data!r}")
    if version == 1:
        endpoints: tuple[Endpoint, ...] = (Endpoint("PLAINTEXT", str(js["host"]), int(js["port"]), "PLAINTEXT"),)
    else:
        protocols = js.get("listener_security_protocol_map") or {p: p for p in _DEFAULT_PROTOCOLS}
        parsed = []
        for text in js.get("endpoints", []):
            ep = Endpoint.parse(text)
            if ep.listener not in protocols:
                raise ValueError(f"No security protocol defined for listener {ep.listener} in {data!r}")
            parsed.append(Endpoint(ep.listener, ep.host, ep.port, str(protocols[ep.listener])))
        endpoints = tuple(parsed)
    rack = js.get("rack")
    ts = js.get("timestamp")
    return BrokerRegistration(
        broker_id=broker_id,
        endpoints=endpoints,
        rack=str(rack) if rack is not None else None,
        jmx_port=int(js.get("jmx_port", -1)),
        timestamp_ms=int(ts) if ts not in (None, "") else 0,
    )


# ---- /controller, /controller_epoch ------------------------------------------------------
def encode_controller(broker_id: int, timestamp_ms: int | None = None) -> bytes:
    """`{"version":2,"brokerid":N,"timestamp":"<ms>","kraftControllerEpoch":-1}` (Kafka 3.9)."""
    ts = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)
    return _dumps({"version": 2, "brokerid": broker_id, "timestamp": str(ts), "kraftControllerEpoch": -1})


def decode_controller(data: bytes) -> int:
    """The controller's broker id."""
    return int(_loads(data, CONTROLLER_PATH)["brokerid"])


def encode_controller_epoch(epoch: int) -> bytes:
    """Plain decimal text, as Kafka writes it."""
    return str(epoch).encode("utf-8")


def decode_controller_epoch(data: bytes) -> int:
    return int(data.decode("utf-8").strip())


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
    return _dumps(body)


def decode_topic(topic: str, data: bytes) -> TopicAssignment:
    """Kafka's `TopicZNode.decode` (versions 1-3)."""
    js = _loads(data, topic_path(topic))

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
    return _dumps(body)


def decode_partition_state(data: bytes, zk_version: int = -1) -> PartitionState:
    js = _loads(data, "partition state")
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
    return _dumps({"version": 1, "config": {str(k): _config_str(v) for k, v in config.items()}})


def _config_str(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def decode_topic_config(data: bytes | None) -> dict[str, str]:
    if not data:
        return {}
    config = _loads(data, "topic config").get("config") or {}
    return {str(k): str(v) for k, v in config.items()}


def encode_config_change(entity_path: str) -> bytes:
    """`/config/changes/config_change_<seq>`: `{"version":2,"entity_path":"topics/foo"}`."""
    return _dumps({"version": 2, "entity_path": entity_path})


# ---- /isr_change_notification/isr_change_<seq> -------------------------------------------
def encode_isr_change(partitions: Iterable[TopicPartition]) -> bytes:
    return _dumps({"version": 1, "partitions": [
        {"topic": tp.topic, "partition": tp.partition} for tp in sorted(set(partitions))]})


def decode_isr_change(data: bytes, what: str = ISR_CHANGE_NOTIFICATION_PATH) -> set[TopicPartition]:
    js = _loads(data, what)
    return {TopicPartition(str(p["topic"]), int(p["partition"])) for p in js.get("partitions", [])}


# ---- /log_dir_event_notification/log_dir_event_<seq> -------------------------------------
LOG_DIR_FAILURE_EVENT = 1    # Kafka's LogDirEventNotificationSequenceZNode.LogDirFailureEvent
REPLICAS_ONLINE_EVENT = 2    # rafka's own: offline replicas of the broker run again (Kafka reads only "broker")


def encode_log_dir_event(broker_id: int, event: int = LOG_DIR_FAILURE_EVENT) -> bytes:
    """`{"version":1,"broker":1,"event":1}`: the broker's set of offline replicas changed; the
    controller learns which (Kafka asks with LeaderAndIsr; rafka reads `/brokers/offline_replicas/<id>`)."""
    return _dumps({"version": 1, "broker": broker_id, "event": event})


def decode_log_dir_event(data: bytes) -> int:
    """The broker a log dir event names (Kafka's decoder reads only that field)."""
    return int(_loads(data, LOG_DIR_EVENT_NOTIFICATION_PATH)["broker"])


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


# ---- /latest_producer_id_block -----------------------------------------------------------
PRODUCER_ID_BLOCK_SIZE = 1000        # Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
MAX_PRODUCER_ID = 2**63 - 1


@dataclass(frozen=True)
class ProducerIdBlock:
    """A block of producer ids handed to one broker: `first_producer_id` .. `last_producer_id`."""

    assigned_broker_id: int
    first_producer_id: int
    size: int

    @property
    def last_producer_id(self) -> int:
        return self.first_producer_id + self.size - 1


def encode_producer_id_block(block: ProducerIdBlock) -> bytes:
    return _dumps({"version": 1, "broker": block.assigned_broker_id,
                   "block_start": str(block.first_producer_id), "block_end": str(block.last_producer_id)})


def decode_producer_id_block(data: bytes) -> ProducerIdBlock:
    js = _loads(data, LATEST_PRODUCER_ID_BLOCK_PATH)
    start, end = int(js["block_start"]), int(js["block_end"])
    return ProducerIdBlock(int(js["broker"]), start, end - start + 1)
