"""Kafka's configuration names and defaults, declared once.

`BrokerConfig.from_properties` reads Kafka's `server.properties` format; unknown keys
are logged as unused, as Kafka does. Topic-level overrides use the topic names
(`segment.bytes` for `log.segment.bytes`) and yield a `LogConfig`.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Mapping

import javaproperties

from rafka.common.errors import InvalidConfigError

log = logging.getLogger(__name__)


def _parse_bool(text: str) -> bool:
    lowered = str(text).strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError(f"expected true or false, got {text!r}")


def _parse_list(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in str(text).split(",") if item.strip())


def _parse_cleanup_policy(text: str) -> tuple[str, ...]:
    """`delete`, `compact`, both, or neither (Kafka's cleanup.policy list); anything else is refused.

    Kafka 3.9 validates the list item by item (`ConfigDef.ValidList.in("compact", "delete")`),
    so an empty list is valid (IncrementalAlterConfigs SUBTRACT of the last policy gives one):
    no retention and no compaction; only segments below the log start offset are deleted,
    and DeleteRecords is refused (POLICY_VIOLATION), as with `compact` alone.
    """
    policies = tuple(p.lower() for p in _parse_list(text))
    if any(p not in ("delete", "compact") for p in policies):
        raise ValueError("String must be one of: compact, delete")
    return policies


def _parse_timestamp_type(text: str) -> str:
    value = str(text).strip()
    if value not in ("CreateTime", "LogAppendTime"):
        raise ValueError("String must be one of: CreateTime, LogAppendTime")
    return value


LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1


def ip_overrides(text: str) -> dict[str, int]:
    """`max.connections.per.ip.overrides` ("hostName:100,127.0.0.1:200") as {host or ip: limit};
    split at the last colon of each item, as Kafka's parseCsvMap does, so IPv6 addresses work.
    ValueError names what is wrong."""
    out: dict[str, int] = {}
    for item in _parse_list(text):
        host, sep, count = item.rpartition(":")
        if not sep or not host.strip():
            raise ValueError(f"Error parsing configuration property 'max.connections.per.ip.overrides': {item!r} "
                             "is not host:count")
        try:
            out[host.strip()] = int(count.strip())
        except ValueError:
            raise ValueError(f"Error parsing configuration property 'max.connections.per.ip.overrides': "
                             f"For input string: \"{count.strip()}\"") from None
    invalid = [h for h in out if not re.fullmatch(r"[0-9A-Za-z.:%_\-\[\]]+", h)]
    if invalid:
        raise ValueError(f"max.connections.per.ip.overrides contains invalid addresses : {','.join(invalid)}")
    return out


def _parse_ip_overrides(text: str) -> str:
    """The overrides as given (a STRING config in Kafka), once they parse."""
    ip_overrides(text)
    return str(text).strip()


@dataclass(frozen=True)
class ConfigKey:
    name: str
    parse: Callable[[str], Any]
    default: Any
    doc: str
    topic_name: str | None = None
    minimum: int | None = None

    def convert(self, raw: Any, name: str | None = None) -> Any:
        """The typed value of `raw`; errors name the key as the caller spelt it (`name`)."""
        name = name or self.name
        try:
            value = raw if not isinstance(raw, str) else self.parse(raw)
            if self.parse is int:
                value = int(value)
        except (TypeError, ValueError) as e:
            raise InvalidConfigError(f"Invalid value {raw!r} for configuration {name}: {e}") from e
        if self.minimum is not None and value < self.minimum:
            raise InvalidConfigError(
                f"Invalid value {raw} for configuration {name}: Value must be at least {self.minimum}")
        return value


BROKER_KEYS: tuple[ConfigKey, ...] = (
    # Kafka's default is -1 (generate); a BrokerConfig without broker.id, as `rafka up` and
    # `Cluster` build one, numbers its brokers from 0 instead (see BrokerConfig.broker_id).
    ConfigKey("broker.id", int, -1,
              "The broker id for this server. If unset, a unique broker id will be generated. To avoid conflicts "
              "between ZooKeeper generated broker id's and user configured broker id's, generated broker ids start "
              "from reserved.broker.max.id + 1."),
    ConfigKey("broker.id.generation.enable", _parse_bool, True,
              "Enable automatic broker id generation on the server. When enabled the value configured for "
              "reserved.broker.max.id should be reviewed."),
    ConfigKey("reserved.broker.max.id", int, 1000, "Max number that can be used for a broker.id", minimum=0),
    ConfigKey("listeners", _parse_list, ("PLAINTEXT://127.0.0.1:9092",), "Listeners to bind."),
    ConfigKey("advertised.listeners", _parse_list, (), "Listeners given to clients; defaults to listeners."),
    ConfigKey("log.dirs", _parse_list, ("/tmp/kafka-logs",), "Directories holding the partition logs."),
    ConfigKey("zookeeper.connect", str, "", "ZooKeeper connect string; empty starts a private one."),
    ConfigKey("zookeeper.session.timeout.ms", int, 18000, "ZooKeeper session timeout.", minimum=1),
    ConfigKey("num.partitions", int, 1, "Partitions of an auto-created topic.", minimum=1),
    ConfigKey("default.replication.factor", int, 1, "Replication factor of an auto-created topic.", minimum=1),
    ConfigKey("auto.create.topics.enable", _parse_bool, True, "Create unknown topics on metadata requests."),
    ConfigKey("message.max.bytes", int, 1048588, "Largest record batch a topic accepts.",
              topic_name="max.message.bytes", minimum=0),
    ConfigKey("log.segment.bytes", int, 1 << 30, "Maximum size of one log segment file.",
              topic_name="segment.bytes", minimum=14),
    ConfigKey("log.index.interval.bytes", int, 4096, "Bytes between offset index entries.",
              topic_name="index.interval.bytes", minimum=0),
    ConfigKey("log.index.size.max.bytes", int, 10485760, "Maximum size of an offset index.",
              topic_name="segment.index.bytes", minimum=4),
    ConfigKey("log.flush.interval.messages", int, LONG_MAX, "Messages between forced flushes.",
              topic_name="flush.messages", minimum=1),
    ConfigKey("log.flush.interval.ms", int, LONG_MAX, "Longest time a message stays unflushed.",
              topic_name="flush.ms", minimum=0),
    ConfigKey("log.flush.scheduler.interval.ms", int, LONG_MAX,
              "How often logs are checked against log.flush.interval.ms.", minimum=1),
    ConfigKey("log.flush.offset.checkpoint.interval.ms", int, 60_000,
              "How often each log dir's recovery-point-offset-checkpoint is written.", minimum=0),
    ConfigKey("log.flush.start.offset.checkpoint.interval.ms", int, 60_000,
              "How often each log dir's log-start-offset-checkpoint is written.", minimum=0),
    ConfigKey("log.roll.ms", int, 7 * 24 * 3600 * 1000, "Age after which the active segment rolls.",
              topic_name="segment.ms", minimum=1),
    ConfigKey("log.roll.jitter.ms", int, 0, "Largest random amount taken off log.roll.ms per segment.",
              topic_name="segment.jitter.ms", minimum=0),
    ConfigKey("log.retention.ms", int, 7 * 24 * 3600 * 1000, "Retention by time; -1 keeps segments forever.",
              topic_name="retention.ms", minimum=-1),
    ConfigKey("log.retention.bytes", int, -1, "Retention by size per partition; -1 is unlimited.",
              topic_name="retention.bytes"),
    ConfigKey("log.retention.check.interval.ms", int, 300_000,
              "How often segments are checked for deletion.", minimum=1),
    ConfigKey("log.segment.delete.delay.ms", int, 60_000,
              "How long a segment stays renamed .deleted before its files are removed.",
              topic_name="file.delete.delay.ms", minimum=0),
    ConfigKey("log.cleanup.policy", _parse_cleanup_policy, ("delete",),
              "delete (retention), compact (keep the latest record per key) or both.",
              topic_name="cleanup.policy"),
    ConfigKey("log.cleaner.enable", _parse_bool, True, "Run the log cleaner for compacted topics."),
    ConfigKey("log.cleaner.threads", int, 1, "Logs cleaned at once by a broker.", minimum=0),
    ConfigKey("log.cleaner.dedupe.buffer.size", int, 134_217_728,
              "Memory for the cleaners' key-hash to offset maps, split between the threads.", minimum=0),
    ConfigKey("log.cleaner.io.buffer.size", int, 524_288, "Read and write buffer of one cleaning.", minimum=0),
    ConfigKey("log.cleaner.backoff.ms", int, 15_000, "Pause of the cleaner when no log needs cleaning.",
              minimum=0),
    ConfigKey("log.cleaner.delete.retention.ms", int, 86_400_000,
              "How long tombstones of a compacted topic are kept after cleaning.",
              topic_name="delete.retention.ms", minimum=0),
    ConfigKey("log.cleaner.min.cleanable.ratio", float, 0.5,
              "Dirty share of a log above which it is cleaned.", topic_name="min.cleanable.dirty.ratio"),
    ConfigKey("log.cleaner.min.compaction.lag.ms", int, 0,
              "Minimum age of a record before it may be compacted.", topic_name="min.compaction.lag.ms",
              minimum=0),
    ConfigKey("log.cleaner.max.compaction.lag.ms", int, LONG_MAX,
              "Maximum age of an uncompacted record.", topic_name="max.compaction.lag.ms", minimum=1),
    ConfigKey("log.message.timestamp.type", _parse_timestamp_type, "CreateTime",
              "CreateTime (the producer's) or LogAppendTime (the broker's).",
              topic_name="message.timestamp.type"),
    ConfigKey("log.message.timestamp.before.max.ms", int, LONG_MAX,
              "How far in the past a CreateTime timestamp may be.",
              topic_name="message.timestamp.before.max.ms", minimum=0),
    ConfigKey("log.message.timestamp.after.max.ms", int, LONG_MAX,
              "How far in the future a CreateTime timestamp may be.",
              topic_name="message.timestamp.after.max.ms", minimum=0),
    ConfigKey("log.preallocate", _parse_bool, False, "Preallocate segment files.", topic_name="preallocate"),
    ConfigKey("min.insync.replicas", int, 1, "Minimum ISR for acks=all.", topic_name="min.insync.replicas",
              minimum=1),
    ConfigKey("replica.lag.time.max.ms", int, 30000, "Time before a lagging follower leaves the ISR."),
    ConfigKey("replica.spare.processes", int, 4,
              "rafka: replica processes each broker keeps started ahead of need, so a new or dormant "
              "partition's replica opens in milliseconds instead of waiting for a process to start. "
              "Once no replica has started for replica.dormant.after.ms, none is kept.", minimum=0),
    ConfigKey("replica.max.live.processes", int, 128,
              "rafka: replica processes a broker runs at most for wakes of dormant replicas; at the cap, "
              "the replicas idle longest are put to rest early to make room (a wake goes ahead over it "
              "at once when every live replica is inside replica.dormant.retry.horizon.ms, when none "
              "came to rest for 10 s, or after 20 s in all). -1: no cap.", minimum=-1),
    ConfigKey("replica.dormant.after.ms", int, 300_000,
              "rafka: how long a replica with no writes (no produce, no follower catching up, no "
              "DeleteRecords or cleaning) keeps its process; then it closes cleanly and its broker serves "
              "reads from its files until a write wakes it. -1: replicas never go dormant.", minimum=-1),
    ConfigKey("replica.dormant.retry.horizon.ms", int, 30_100,
              "rafka: a replica that appended within this long is never put to rest, neither after "
              "replica.dormant.after.ms nor early to make room under replica.max.live.processes (a wake "
              "then goes over the cap): a producer whose answers were lost retries within its "
              "request.timeout.ms plus retry.backoff.ms (30000 + 100 with Kafka's client defaults). "
              "0: no horizon.", minimum=0),
    ConfigKey("replica.alter.log.dirs.io.max.bytes.per.second", int, LONG_MAX,
              "Bytes per second a replica move between log dirs (AlterReplicaLogDirs) copies at most.", minimum=1),
    ConfigKey("auto.leader.rebalance.enable", _parse_bool, True,
              "Move leadership back to preferred replicas when a broker's leaders are imbalanced."),
    ConfigKey("leader.imbalance.check.interval.seconds", int, 300,
              "How often the controller checks the leader imbalance.", minimum=1),
    ConfigKey("leader.imbalance.per.broker.percentage", int, 10,
              "The share of a broker's preferred partitions led elsewhere that triggers a rebalance.", minimum=0),
    ConfigKey("unclean.leader.election.enable", _parse_bool, False,
              "Elect a replica outside the ISR as leader when no ISR member lives (data may be lost).",
              topic_name="unclean.leader.election.enable"),
    ConfigKey("producer.id.expiration.ms", int, 86_400_000,
              "Idle time after which a partition forgets an idempotent producer's state.", minimum=1),
    ConfigKey("producer.id.expiration.check.interval.ms", int, 600_000,
              "How often partitions look for expired producer ids.", minimum=1),
    ConfigKey("transactional.id.expiration.ms", int, 604_800_000,
              "Idle time after which a producer id's epoch is no longer remembered for bumping.", minimum=1),
    ConfigKey("transaction.state.log.num.partitions", int, 50,
              "Partitions of __transaction_state (each partition replica here is a process of its own "
              "once written; new ones rest).", minimum=1),
    ConfigKey("transaction.state.log.replication.factor", int, 3,
              "Replication factor of __transaction_state, capped by the live brokers.", minimum=1),
    ConfigKey("transaction.state.log.min.isr", int, 2,
              "min.insync.replicas of __transaction_state (capped by its replication factor).", minimum=1),
    ConfigKey("transaction.state.log.segment.bytes", int, 104_857_600,
              "Segment size of __transaction_state.", minimum=1),
    ConfigKey("transaction.max.timeout.ms", int, 900_000,
              "The largest transaction.timeout.ms a producer may ask for (INVALID_TRANSACTION_TIMEOUT above).",
              minimum=1),
    ConfigKey("transaction.abort.timed.out.transaction.cleanup.interval.ms", int, 10_000,
              "How often the transaction coordinator aborts transactions open past their timeout.", minimum=1),
    ConfigKey("transaction.remove.expired.transaction.cleanup.interval.ms", int, 3_600_000,
              "How often the transaction coordinator removes expired transactional ids.", minimum=1),
    ConfigKey("transaction.partition.verification.enable", _parse_bool, True,
              "A partition leader asks the transaction coordinator whether a transactional produce's "
              "partition is in its transaction before appending it (KIP-890)."),
    ConfigKey("offsets.topic.num.partitions", int, 8,
              "Partitions of __consumer_offsets (Kafka: 50; each partition replica here is a process of its own).",
              minimum=1),
    ConfigKey("offsets.topic.replication.factor", int, 3,
              "Replication factor of __consumer_offsets, capped by the live brokers.", minimum=1),
    ConfigKey("offsets.topic.segment.bytes", int, 104_857_600, "Segment size of __consumer_offsets.",
              minimum=1),
    ConfigKey("offsets.retention.minutes", int, 10_080,
              "How long committed offsets of an empty group are kept.", minimum=1),
    ConfigKey("offsets.retention.check.interval.ms", int, 600_000,
              "How often expired offsets are looked for.", minimum=1),
    ConfigKey("offsets.commit.timeout.ms", int, 5000,
              "How long an offset commit waits for its write to __consumer_offsets.", minimum=1),
    ConfigKey("offset.metadata.max.bytes", int, 4096, "Largest metadata string of an offset commit."),
    ConfigKey("group.min.session.timeout.ms", int, 6000, "Smallest session timeout a member may ask for."),
    ConfigKey("group.max.session.timeout.ms", int, 1_800_000, "Largest session timeout a member may ask for."),
    ConfigKey("group.initial.rebalance.delay.ms", int, 3000,
              "How long the first rebalance of an empty group waits for more members."),
    ConfigKey("group.max.size", int, 2_147_483_647, "Most members of one consumer group.", minimum=1),
    # The socket server (Kafka's SocketServerConfigs); see net/request_memory.py for how rafka bounds memory.
    ConfigKey("socket.request.max.bytes", int, 104_857_600, "The maximum number of bytes in a socket request",
              minimum=1),
    ConfigKey("queued.max.requests", int, 500,
              "Requests of one connection read but not answered yet before reading from it pauses "
              "(Kafka: the requests queued for the handler threads).", minimum=1),
    ConfigKey("queued.max.request.bytes", int, 104_857_600,
              "The number of queued bytes allowed before no more requests are read (rafka's default; "
              "Kafka's -1 means unbounded).", minimum=-1),
    ConfigKey("max.connections", int, INT_MAX,
              "The maximum number of connections we allow in the broker at any time; new connections wait to "
              "be accepted while it is reached.", minimum=0),
    ConfigKey("max.connections.per.ip", int, INT_MAX,
              "The maximum number of connections we allow from each ip address. This can be set to 0 if there "
              "are overrides configured using max.connections.per.ip.overrides property. New connections from "
              "the ip address are dropped if the limit is reached.", minimum=0),
    ConfigKey("max.connections.per.ip.overrides", _parse_ip_overrides, "",
              "A comma-separated list of per-ip or hostname overrides to the default maximum number of "
              "connections. An example value is \"hostName:100,127.0.0.1:200\""),
    ConfigKey("connections.max.idle.ms", int, 600_000,
              "Idle connections timeout: the server socket processor threads close the connections that idle "
              "more than this"),
    ConfigKey("rack", str, "", "The broker's rack (broker.rack)."),
    ConfigKey("broker.rack", str, "", "The broker's rack."),
)
_BY_NAME = {key.name: key for key in BROKER_KEYS}
_BY_TOPIC_NAME = {key.topic_name: key for key in BROKER_KEYS if key.topic_name}


def _default(name: str) -> Any:
    """The default of broker key `name` in `BROKER_KEYS`: the dataclasses below take their
    defaults from the table, so a default is written once (KeyError for a name not in it)."""
    return _BY_NAME[name].default


def _topic_default(topic_name: str) -> Any:
    """The default of the topic config `topic_name` (`segment.bytes`): its broker key's."""
    return _BY_TOPIC_NAME[topic_name].default


@dataclass(frozen=True)
class LogConfig:
    """Per-topic log settings (topic names), resolved against the broker defaults; each
    default is its broker key's in `BROKER_KEYS`."""

    segment_bytes: int = _topic_default("segment.bytes")
    segment_ms: int = _topic_default("segment.ms")
    segment_jitter_ms: int = _topic_default("segment.jitter.ms")
    index_interval_bytes: int = _topic_default("index.interval.bytes")
    segment_index_bytes: int = _topic_default("segment.index.bytes")
    max_message_bytes: int = _topic_default("max.message.bytes")
    flush_messages: int = _topic_default("flush.messages")
    flush_ms: int = _topic_default("flush.ms")
    retention_ms: int = _topic_default("retention.ms")
    retention_bytes: int = _topic_default("retention.bytes")
    file_delete_delay_ms: int = _topic_default("file.delete.delay.ms")
    cleanup_policy: tuple[str, ...] = _topic_default("cleanup.policy")
    delete_retention_ms: int = _topic_default("delete.retention.ms")
    min_cleanable_dirty_ratio: float = _topic_default("min.cleanable.dirty.ratio")
    min_compaction_lag_ms: int = _topic_default("min.compaction.lag.ms")
    max_compaction_lag_ms: int = _topic_default("max.compaction.lag.ms")
    message_timestamp_type: str = _topic_default("message.timestamp.type")
    message_timestamp_before_max_ms: int = _topic_default("message.timestamp.before.max.ms")
    message_timestamp_after_max_ms: int = _topic_default("message.timestamp.after.max.ms")
    preallocate: bool = _topic_default("preallocate")
    unclean_leader_election_enable: bool = _topic_default("unclean.leader.election.enable")
    min_insync_replicas: int = _topic_default("min.insync.replicas")
    # Broker-wide, not topic configs: carried here because the partition replica applies them.
    producer_id_expiration_ms: int = _default("producer.id.expiration.ms")
    producer_id_expiration_check_interval_ms: int = _default("producer.id.expiration.check.interval.ms")
    retention_check_interval_ms: int = _default("log.retention.check.interval.ms")
    flush_scheduler_interval_ms: int = _default("log.flush.scheduler.interval.ms")
    replica_lag_time_max_ms: int = _default("replica.lag.time.max.ms")
    replica_dormant_after_ms: int = _default("replica.dormant.after.ms")
    replica_dormant_retry_horizon_ms: int = _default("replica.dormant.retry.horizon.ms")

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    def with_overrides(self, overrides: Mapping[str, str]) -> "LogConfig":
        """Apply topic configs such as {"segment.bytes": "1048576"}; unknown names are refused."""
        changes: dict[str, Any] = {}
        for name, raw in overrides.items():
            key = _BY_TOPIC_NAME.get(name)
            if key is None:
                if name in KNOWN_TOPIC_CONFIGS:
                    continue
                raise InvalidConfigError(f"Unknown topic config name: {name}")
            changes[name.replace(".", "_")] = key.convert(raw, name)
        return replace(self, **changes)


# Topic config names Kafka accepts that this version stores but does not act on yet.
KNOWN_TOPIC_CONFIGS = frozenset({
    "compression.type", "message.downconversion.enable", "local.retention.ms",
    "local.retention.bytes", "remote.storage.enable", "follower.replication.throttled.replicas",
    "leader.replication.throttled.replicas", "message.timestamp.difference.max.ms",
})


@dataclass(frozen=True)
class BrokerConfig:
    """A broker's configuration (Kafka's names with `_` for `.`), each default the one of its
    key in `BROKER_KEYS` (broker.id aside, below). `from_mapping` refuses what Kafka's config
    parsing would (InvalidConfigError)."""

    # rafka's default, not Kafka's -1: `rafka up` and `Cluster` number the brokers they start
    # from 0 when no broker.id is given. broker.id=-1 asks for Kafka's: the id in the log dirs'
    # meta.properties, else a new one from ZooKeeper (rafka.coordinator.broker.broker_id).
    broker_id: int = 0
    broker_id_generation_enable: bool = _default("broker.id.generation.enable")
    reserved_broker_max_id: int = _default("reserved.broker.max.id")
    listeners: tuple[str, ...] = _default("listeners")
    advertised_listeners: tuple[str, ...] = _default("advertised.listeners")
    log_dirs: tuple[str, ...] = _default("log.dirs")
    zookeeper_connect: str = _default("zookeeper.connect")
    zookeeper_session_timeout_ms: int = _default("zookeeper.session.timeout.ms")
    num_partitions: int = _default("num.partitions")
    default_replication_factor: int = _default("default.replication.factor")
    auto_create_topics_enable: bool = _default("auto.create.topics.enable")
    message_max_bytes: int = _default("message.max.bytes")
    log_segment_bytes: int = _default("log.segment.bytes")
    log_index_interval_bytes: int = _default("log.index.interval.bytes")
    log_index_size_max_bytes: int = _default("log.index.size.max.bytes")
    log_flush_interval_messages: int = _default("log.flush.interval.messages")
    log_flush_interval_ms: int = _default("log.flush.interval.ms")
    log_flush_scheduler_interval_ms: int = _default("log.flush.scheduler.interval.ms")
    log_flush_offset_checkpoint_interval_ms: int = _default("log.flush.offset.checkpoint.interval.ms")
    log_flush_start_offset_checkpoint_interval_ms: int = _default("log.flush.start.offset.checkpoint.interval.ms")
    log_roll_ms: int = _default("log.roll.ms")
    log_roll_jitter_ms: int = _default("log.roll.jitter.ms")
    log_retention_ms: int = _default("log.retention.ms")
    log_retention_bytes: int = _default("log.retention.bytes")
    log_retention_check_interval_ms: int = _default("log.retention.check.interval.ms")
    log_segment_delete_delay_ms: int = _default("log.segment.delete.delay.ms")
    log_cleanup_policy: tuple[str, ...] = _default("log.cleanup.policy")
    log_cleaner_enable: bool = _default("log.cleaner.enable")
    log_cleaner_threads: int = _default("log.cleaner.threads")
    log_cleaner_dedupe_buffer_size: int = _default("log.cleaner.dedupe.buffer.size")
    log_cleaner_io_buffer_size: int = _default("log.cleaner.io.buffer.size")
    log_cleaner_backoff_ms: int = _default("log.cleaner.backoff.ms")
    log_cleaner_delete_retention_ms: int = _default("log.cleaner.delete.retention.ms")
    log_cleaner_min_cleanable_ratio: float = _default("log.cleaner.min.cleanable.ratio")
    log_cleaner_min_compaction_lag_ms: int = _default("log.cleaner.min.compaction.lag.ms")
    log_cleaner_max_compaction_lag_ms: int = _default("log.cleaner.max.compaction.lag.ms")
    log_message_timestamp_type: str = _default("log.message.timestamp.type")
    log_message_timestamp_before_max_ms: int = _default("log.message.timestamp.before.max.ms")
    log_message_timestamp_after_max_ms: int = _default("log.message.timestamp.after.max.ms")
    log_preallocate: bool = _default("log.preallocate")
    unclean_leader_election_enable: bool = _default("unclean.leader.election.enable")
    auto_leader_rebalance_enable: bool = _default("auto.leader.rebalance.enable")
    leader_imbalance_check_interval_seconds: int = _default("leader.imbalance.check.interval.seconds")
    leader_imbalance_per_broker_percentage: int = _default("leader.imbalance.per.broker.percentage")
    min_insync_replicas: int = _default("min.insync.replicas")
    replica_lag_time_max_ms: int = _default("replica.lag.time.max.ms")
    replica_dormant_after_ms: int = _default("replica.dormant.after.ms")
    replica_dormant_retry_horizon_ms: int = _default("replica.dormant.retry.horizon.ms")
    replica_spare_processes: int = _default("replica.spare.processes")
    replica_max_live_processes: int = _default("replica.max.live.processes")
    replica_alter_log_dirs_io_max_bytes_per_second: int = _default("replica.alter.log.dirs.io.max.bytes.per.second")
    producer_id_expiration_ms: int = _default("producer.id.expiration.ms")
    producer_id_expiration_check_interval_ms: int = _default("producer.id.expiration.check.interval.ms")
    transactional_id_expiration_ms: int = _default("transactional.id.expiration.ms")
    transaction_state_log_num_partitions: int = _default("transaction.state.log.num.partitions")
    transaction_state_log_replication_factor: int = _default("transaction.state.log.replication.factor")
    transaction_state_log_min_isr: int = _default("transaction.state.log.min.isr")
    transaction_state_log_segment_bytes: int = _default("transaction.state.log.segment.bytes")
    transaction_max_timeout_ms: int = _default("transaction.max.timeout.ms")
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = _default(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms")
    transaction_remove_expired_transaction_cleanup_interval_ms: int = _default(
        "transaction.remove.expired.transaction.cleanup.interval.ms")
    transaction_partition_verification_enable: bool = _default("transaction.partition.verification.enable")
    offsets_topic_num_partitions: int = _default("offsets.topic.num.partitions")
    offsets_topic_replication_factor: int = _default("offsets.topic.replication.factor")
    offsets_topic_segment_bytes: int = _default("offsets.topic.segment.bytes")
    offsets_retention_minutes: int = _default("offsets.retention.minutes")
    offsets_retention_check_interval_ms: int = _default("offsets.retention.check.interval.ms")
    offsets_commit_timeout_ms: int = _default("offsets.commit.timeout.ms")
    offset_metadata_max_bytes: int = _default("offset.metadata.max.bytes")
    group_min_session_timeout_ms: int = _default("group.min.session.timeout.ms")
    group_max_session_timeout_ms: int = _default("group.max.session.timeout.ms")
    group_initial_rebalance_delay_ms: int = _default("group.initial.rebalance.delay.ms")
    group_max_size: int = _default("group.max.size")
    socket_request_max_bytes: int = _default("socket.request.max.bytes")
    queued_max_requests: int = _default("queued.max.requests")
    queued_max_request_bytes: int = _default("queued.max.request.bytes")
    max_connections: int = _default("max.connections")
    max_connections_per_ip: int = _default("max.connections.per.ip")
    max_connections_per_ip_overrides: str = _default("max.connections.per.ip.overrides")
    connections_max_idle_ms: int = _default("connections.max.idle.ms")
    rack: str = _default("rack")
    broker_rack: str = _default("broker.rack")
    unused: tuple[str, ...] = field(default=(), compare=False)
    # The known keys as the properties gave them (name, text), coarse units included: DescribeConfigs
    # reports these as STATIC_BROKER_CONFIG even where the value is Kafka's default.
    given: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def check_broker_id(self) -> None:
        """Kafka's KafkaConfig.validateValues rules for a configured broker.id (not for the id a
        broker resolves at start, which may be a generated one above reserved.broker.max.id)."""
        if self.broker_id_generation_enable:
            if not -1 <= self.broker_id <= self.reserved_broker_max_id:
                raise InvalidConfigError(
                    "broker.id must be greater than or equal to -1 and not greater than reserved.broker.max.id "
                    f"(broker.id={self.broker_id}, reserved.broker.max.id={self.reserved_broker_max_id})")
        elif self.broker_id < 0:
            raise InvalidConfigError(f"broker.id must be greater than or equal to 0 (broker.id={self.broker_id}, "
                                     "broker.id.generation.enable=false)")

    def check_socket_server(self) -> None:
        """Kafka's KafkaConfig.validateValues rules for the socket server keys."""
        if 0 < self.queued_max_request_bytes < self.socket_request_max_bytes:
            raise InvalidConfigError("queued.max.request.bytes must be larger or equal to socket.request.max.bytes")
        if self.max_connections_per_ip == 0 and not ip_overrides(self.max_connections_per_ip_overrides):
            raise InvalidConfigError("max.connections.per.ip can be set to zero only if "
                                     "max.connections.per.ip.overrides property is set.")

    @classmethod
    def from_mapping(cls, props: Mapping[str, Any]) -> "BrokerConfig":
        """Kafka-named settings; `log.retention.hours`/`.minutes` and `log.roll.hours` (and
        the jitter) stand in for the `.ms` key when it is absent, as in Kafka."""
        given = tuple(sorted((name, str(raw)) for name, raw in props.items()
                             if name in _BY_NAME or name in COARSE_UNIT_DEFAULTS))
        props = _with_coarse_units(props)
        values: dict[str, Any] = {}
        unused = []
        for name, raw in props.items():
            key = _BY_NAME.get(name)
            if key is None:
                unused.append(name)
                continue
            values[name.replace(".", "_")] = key.convert(raw)
        for name in unused:
            log.info("The configuration '%s' was supplied but isn't a known config.", name)
        config = cls(**values, unused=tuple(unused), given=given)
        config.check_broker_id()
        config.check_socket_server()
        return config

    @classmethod
    def from_properties(cls, path: str | Path) -> "BrokerConfig":
        return cls.from_mapping(read_properties(Path(path).read_text()))

    def replace(self, **changes: Any) -> "BrokerConfig":
        return replace(self, **changes)

    def to_properties(self) -> dict[str, str]:
        """Kafka-named string form, for handing a config to another process."""
        out = {}
        for f in fields(self):
            if f.name in ("unused", "given"):
                continue
            value = getattr(self, f.name)
            name = f.name.replace("_", ".")
            out[name] = ",".join(value) if isinstance(value, tuple) else str(value).lower() if isinstance(value, bool) else str(value)
        return out

    @property
    def rack_id(self) -> str | None:
        return self.broker_rack or self.rack or None

    def log_config(self) -> LogConfig:
        """The broker defaults of every topic config, plus the broker-wide values replicas apply."""
        values = {key.topic_name.replace(".", "_"): getattr(self, key.name.replace(".", "_"))
                  for key in BROKER_KEYS if key.topic_name}
        return LogConfig(
            **values,
            producer_id_expiration_ms=self.producer_id_expiration_ms,
            producer_id_expiration_check_interval_ms=self.producer_id_expiration_check_interval_ms,
            retention_check_interval_ms=self.log_retention_check_interval_ms,
            flush_scheduler_interval_ms=self.log_flush_scheduler_interval_ms,
            replica_lag_time_max_ms=self.replica_lag_time_max_ms,
            replica_dormant_after_ms=self.replica_dormant_after_ms,
            replica_dormant_retry_horizon_ms=self.replica_dormant_retry_horizon_ms,
        )


# Kafka 3.9's defaults of the coarse spellings (KafkaConfig: INT keys; None: no default).
COARSE_UNIT_DEFAULTS: dict[str, int | None] = {
    "log.retention.minutes": None, "log.retention.hours": 168, "log.roll.hours": 168, "log.roll.jitter.hours": 0,
}

# Coarser spellings Kafka accepts for a `.ms` key, finest first: (ms key, [(name, factor)]).
_COARSE_UNITS = (
    ("log.retention.ms", (("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000))),
    ("log.roll.ms", (("log.roll.hours", 3_600_000),)),
    ("log.roll.jitter.ms", (("log.roll.jitter.hours", 3_600_000),)),
)


def _with_coarse_units(props: Mapping[str, Any]) -> dict[str, Any]:
    """Replace `log.retention.hours` and friends by their `.ms` key unless that is given."""
    out = dict(props)
    for ms_name, coarse in _COARSE_UNITS:
        for name, factor in coarse:
            if name not in out:
                continue
            raw = out.pop(name)
            if ms_name in props or any(n in props for n, _ in coarse[:coarse.index((name, factor))]):
                continue
            try:
                value = int(str(raw).strip())
            except ValueError as e:
                raise InvalidConfigError(f"Invalid value {raw!r} for configuration {name}: {e}") from e
            out[ms_name] = str(value * factor if value >= 0 else value)
    return out


def read_properties(text: str) -> dict[str, str]:
    """Java's `.properties` format, as `java.util.Properties.load` reads it (`javaproperties`):
    `key=value`, `key: value` or `key value`; `#` and `!` comments; a line ending in an odd
    number of backslashes goes on on the next; `\\uXXXX` escapes; `\\=`, `\\:` and `\\ ` keep a
    separator in a key. The last of repeated keys wins. Values are trimmed, as Kafka trims
    config values before parsing them. InvalidConfigError for a malformed `\\u` escape.
    """
    try:
        props = javaproperties.loads(text)
    except javaproperties.InvalidUEscapeError as e:
        raise InvalidConfigError(f"malformed properties: {e}") from e
    return {key: value.strip() for key, value in props.items()}
