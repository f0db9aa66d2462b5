"""Kafka's configuration names and defaults, declared once.

`BrokerConfig.from_properties` reads Kafka's `server.properties` format; unknown keys
are logged as unused, as Kafka does. Topic-level overrides use the topic names
(`segment.bytes` for `log.segment.bytes`) and yield a `LogConfig`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from rafka.common.errors import InvalidConfigError

log = logging.getLogger(__name__)


def _parse_bool(text: str) -> bool:
    lowered = str(text).strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError(f"expected true or false, got {text!r}")


def _parse_list(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in str(text).split(",") if item.strip())


@dataclass(frozen=True)
class ConfigKey:
    name: str
    parse: Callable[[str], Any]
    default: Any
    doc: str
    topic_name: str | None = None
    minimum: int | None = None

    def convert(self, raw: Any) -> Any:
        try:
            value = raw if not isinstance(raw, str) else self.parse(raw)
            if self.parse is int:
                value = int(value)
        except (TypeError, ValueError) as e:
            raise InvalidConfigError(f"Invalid value {raw!r} for configuration {self.name}: {e}") from e
        if self.minimum is not None and value < self.minimum:
            raise InvalidConfigError(
                f"Invalid value {raw} for configuration {self.name}: Value must be at least {self.minimum}")
        return value


BROKER_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey("broker.id", int, 0, "The id of this broker.", minimum=0),
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
    ConfigKey("log.flush.interval.messages", int, (1 << 63) - 1, "Messages between forced flushes.",
              topic_name="flush.messages", minimum=1),
    ConfigKey("log.retention.ms", int, 7 * 24 * 3600 * 1000, "Retention by time.", topic_name="retention.ms"),
    ConfigKey("min.insync.replicas", int, 1, "Minimum ISR for acks=all.", topic_name="min.insync.replicas",
              minimum=1),
    ConfigKey("replica.lag.time.max.ms", int, 30000, "Time before a lagging follower leaves the ISR."),
    ConfigKey("producer.id.expiration.ms", int, 86_400_000,
              "Idle time after which a partition forgets an idempotent producer's state.", minimum=1),
    ConfigKey("producer.id.expiration.check.interval.ms", int, 600_000,
              "How often partitions look for expired producer ids.", minimum=1),
    ConfigKey("transactional.id.expiration.ms", int, 604_800_000,
              "Idle time after which a producer id's epoch is no longer remembered for bumping.", minimum=1),
    ConfigKey("offsets.topic.num.partitions", int, 8,
              "Partitions of __consumer_offsets (Kafka: 50; each partition here is a ~60 MiB process).",
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
    ConfigKey("rack", str, "", "The broker's rack (broker.rack)."),
    ConfigKey("broker.rack", str, "", "The broker's rack."),
)
_BY_NAME = {key.name: key for key in BROKER_KEYS}
_BY_TOPIC_NAME = {key.topic_name: key for key in BROKER_KEYS if key.topic_name}


@dataclass(frozen=True)
class LogConfig:
    """Per-topic log settings (topic names), resolved against the broker defaults."""

    segment_bytes: int = 1 << 30
    index_interval_bytes: int = 4096
    segment_index_bytes: int = 10485760
    max_message_bytes: int = 1048588
    flush_messages: int = (1 << 63) - 1
    retention_ms: int = 7 * 24 * 3600 * 1000
    min_insync_replicas: int = 1
    # Broker-wide, not topic configs: carried here because the partition log applies them.
    producer_id_expiration_ms: int = 86_400_000
    producer_id_expiration_check_interval_ms: int = 600_000

    def with_overrides(self, overrides: Mapping[str, str]) -> "LogConfig":
        """Apply topic configs such as {"segment.bytes": "1048576"}; unknown names are refused."""
        changes: dict[str, Any] = {}
        for name, raw in overrides.items():
            key = _BY_TOPIC_NAME.get(name)
            if key is None:
                if name in KNOWN_TOPIC_CONFIGS:
                    continue
                raise InvalidConfigError(f"Unknown topic config name: {name}")
            changes[name.replace(".", "_")] = key.convert(raw)
        return replace(self, **changes)


# Topic config names Kafka accepts that this version stores but does not act on yet.
KNOWN_TOPIC_CONFIGS = frozenset({
    "cleanup.policy", "compression.type", "delete.retention.ms", "file.delete.delay.ms",
    "flush.ms", "message.timestamp.type", "min.cleanable.dirty.ratio", "min.compaction.lag.ms",
    "max.compaction.lag.ms", "retention.bytes", "segment.ms", "segment.jitter.ms",
    "unclean.leader.election.enable", "message.downconversion.enable", "preallocate",
    "message.timestamp.before.max.ms", "message.timestamp.after.max.ms", "local.retention.ms",
    "local.retention.bytes", "remote.storage.enable", "follower.replication.throttled.replicas",
    "leader.replication.throttled.replicas", "message.timestamp.difference.max.ms",
})


@dataclass(frozen=True)
class BrokerConfig:
    broker_id: int = 0
    listeners: tuple[str, ...] = ("PLAINTEXT://127.0.0.1:9092",)
    advertised_listeners: tuple[str, ...] = ()
    log_dirs: tuple[str, ...] = ("/tmp/kafka-logs",)
    zookeeper_connect: str = ""
    zookeeper_session_timeout_ms: int = 18000
    num_partitions: int = 1
    default_replication_factor: int = 1
    auto_create_topics_enable: bool = True
    message_max_bytes: int = 1048588
    log_segment_bytes: int = 1 << 30
    log_index_interval_bytes: int = 4096
    log_index_size_max_bytes: int = 10485760
    log_flush_interval_messages: int = (1 << 63) - 1
    log_retention_ms: int = 7 * 24 * 3600 * 1000
    min_insync_replicas: int = 1
    replica_lag_time_max_ms: int = 30000
    producer_id_expiration_ms: int = 86_400_000
    producer_id_expiration_check_interval_ms: int = 600_000
    transactional_id_expiration_ms: int = 604_800_000
    offsets_topic_num_partitions: int = 8
    offsets_topic_replication_factor: int = 3
    offsets_topic_segment_bytes: int = 104_857_600
    offsets_retention_minutes: int = 10_080
    offsets_retention_check_interval_ms: int = 600_000
    offsets_commit_timeout_ms: int = 5000
    offset_metadata_max_bytes: int = 4096
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = 2_147_483_647
    rack: str = ""
    broker_rack: str = ""
    unused: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def from_mapping(cls, props: Mapping[str, Any]) -> "BrokerConfig":
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
        return cls(**values, unused=tuple(unused))

    @classmethod
    def from_properties(cls, path: str | Path) -> "BrokerConfig":
        return cls.from_mapping(read_properties(Path(path).read_text()))

    def replace(self, **changes: Any) -> "BrokerConfig":
        return replace(self, **changes)

    def to_properties(self) -> dict[str, str]:
        """Kafka-named string form, for handing a config to another process."""
        out = {}
        for f in fields(self):
            if f.name == "unused":
                continue
            value = getattr(self, f.name)
            name = f.name.replace("_", ".")
            out[name] = ",".join(value) if isinstance(value, tuple) else str(value).lower() if isinstance(value, bool) else str(value)
        return out

    @property
    def rack_id(self) -> str | None:
        return self.broker_rack or self.rack or None

    def log_config(self) -> LogConfig:
        return LogConfig(
            segment_bytes=self.log_segment_bytes,
            index_interval_bytes=self.log_index_interval_bytes,
            segment_index_bytes=self.log_index_size_max_bytes,
            max_message_bytes=self.message_max_bytes,
            flush_messages=self.log_flush_interval_messages,
            retention_ms=self.log_retention_ms,
            min_insync_replicas=self.min_insync_replicas,
            producer_id_expiration_ms=self.producer_id_expiration_ms,
            producer_id_expiration_check_interval_ms=self.producer_id_expiration_check_interval_ms,
        )


def read_properties(text: str) -> dict[str, str]:
    """Parse Java's .properties format: `key=value` or `key: value`, `#`/`!` comments, `\\` continuations."""
    props: dict[str, str] = {}
    pending = ""
    for raw_line in text.splitlines():
        line = raw_line.strip() if not pending else raw_line.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending += line[:-1]
            continue
        line, pending = pending + line, ""
        sep_at = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep_at < 0:
            key, value = line.split(None, 1) if " " in line else (line, "")
        else:
            key, value = line[:sep_at], line[sep_at + 1:]
        props[key.strip()] = value.strip()
    return props
