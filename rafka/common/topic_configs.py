"""Topic configs as DescribeConfigs and (Incremental)AlterConfigs see them, Kafka's way.

Pure: renders a topic's effective configs (its overrides over the broker's defaults) with
Kafka's sources, types and synonyms, and applies IncrementalAlterConfigs operations to a
topic's overrides. The front end answers the APIs with these; the coordinator writes the
result to ZooKeeper (`/config/topics/<t>` plus a change notification).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Iterable, Mapping

from rafka.common.config import BROKER_KEYS, COARSE_UNIT_DEFAULTS, BrokerConfig, ConfigKey, LogConfig
from rafka.common.errors import InvalidConfigError, InvalidRequestError


class ConfigSource(IntEnum):
    """DescribeConfigsResponse's config_source (Kafka's DescribeConfigsResponse.ConfigSource)."""

    DYNAMIC_TOPIC_CONFIG = 1
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


class ConfigType(IntEnum):
    """DescribeConfigsResponse's config_type (v3+)."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7


class AlterOp(IntEnum):
    """IncrementalAlterConfigs' config_operation."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True)
class Synonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True)
class ConfigEntry:
    """One config of a described resource."""

    name: str
    value: str | None
    source: ConfigSource
    type: ConfigType
    documentation: str
    synonyms: tuple[Synonym, ...] = ()
    read_only: bool = False
    sensitive: bool = False


# Topic configs Kafka 3.9 lists that rafka stores but does not act on, with Kafka's defaults.
_PASSIVE_TOPIC_CONFIGS: tuple[tuple[str, str, ConfigType, str], ...] = (
    ("compression.type", "producer", ConfigType.STRING, "Final compression of the topic's batches (stored as sent)."),
    ("message.downconversion.enable", "true", ConfigType.BOOLEAN, "Down-convert batches for old fetchers."),
    ("local.retention.ms", "-2", ConfigType.LONG, "Local retention with tiered storage (none here)."),
    ("local.retention.bytes", "-2", ConfigType.LONG, "Local retention with tiered storage (none here)."),
    ("remote.storage.enable", "false", ConfigType.BOOLEAN, "Tiered storage (not supported)."),
    ("follower.replication.throttled.replicas", "", ConfigType.LIST, "Throttled follower replicas."),
    ("leader.replication.throttled.replicas", "", ConfigType.LIST, "Throttled leader replicas."),
)
_PASSIVE = {name: (default, kind, doc) for name, default, kind, doc in _PASSIVE_TOPIC_CONFIGS}
_INT_CONFIGS = frozenset({"segment.bytes", "segment.index.bytes", "index.interval.bytes", "max.message.bytes",
                          "min.insync.replicas"})
TOPIC_KEYS: dict[str, ConfigKey] = {key.topic_name: key for key in BROKER_KEYS if key.topic_name}


def render(value: Any) -> str:
    """A config value in Kafka's string form (lists comma-joined, booleans lower case)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (tuple, list)):
        return ",".join(str(v) for v in value)
    return str(value)


def _type_of(key: ConfigKey) -> ConfigType:
    if isinstance(key.default, bool):
        return ConfigType.BOOLEAN
    if isinstance(key.default, float):
        return ConfigType.DOUBLE
    if isinstance(key.default, tuple):
        return ConfigType.LIST
    if isinstance(key.default, int):
        return ConfigType.INT if key.topic_name in _INT_CONFIGS else ConfigType.LONG
    return ConfigType.STRING


# Each broker key's type as Kafka 3.9's KafkaConfig defines it (listeners and log.dirs are
# STRINGs there, offsets.topic.replication.factor a SHORT); `rack` is rafka's own.
BROKER_CONFIG_TYPES: dict[str, ConfigType] = {
    **{name: ConfigType.STRING for name in (
        "listeners", "advertised.listeners", "log.dirs", "zookeeper.connect", "log.message.timestamp.type",
        "rack", "broker.rack", "max.connections.per.ip.overrides")},
    **{name: ConfigType.BOOLEAN for name in ("auto.create.topics.enable", "log.cleaner.enable", "log.preallocate",
                                             "unclean.leader.election.enable", "auto.leader.rebalance.enable",
                                             "broker.id.generation.enable",
                                             "transaction.partition.verification.enable")},
    **{name: ConfigType.INT for name in (
        "broker.id", "reserved.broker.max.id", "zookeeper.session.timeout.ms", "num.partitions", "default.replication.factor",
        "leader.imbalance.per.broker.percentage", "replica.spare.processes", "replica.max.live.processes",
        "message.max.bytes", "log.segment.bytes", "log.index.interval.bytes", "log.index.size.max.bytes",
        "log.flush.offset.checkpoint.interval.ms", "log.flush.start.offset.checkpoint.interval.ms",
        "log.cleaner.threads", "log.cleaner.io.buffer.size", "min.insync.replicas", "producer.id.expiration.ms",
        "producer.id.expiration.check.interval.ms", "transactional.id.expiration.ms",
        "transaction.state.log.num.partitions", "transaction.state.log.min.isr", "transaction.state.log.segment.bytes",
        "transaction.max.timeout.ms", "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        "offsets.topic.num.partitions", "offsets.topic.segment.bytes", "offsets.retention.minutes",
        "offsets.commit.timeout.ms", "offset.metadata.max.bytes", "group.min.session.timeout.ms",
        "group.max.session.timeout.ms", "group.initial.rebalance.delay.ms", "group.max.size",
        "socket.request.max.bytes", "queued.max.requests", "max.connections", "max.connections.per.ip",
        *COARSE_UNIT_DEFAULTS)},
    "offsets.topic.replication.factor": ConfigType.SHORT,
    "transaction.state.log.replication.factor": ConfigType.SHORT,
    **{name: ConfigType.LONG for name in (
        "leader.imbalance.check.interval.seconds",
        "log.flush.interval.messages", "log.flush.interval.ms", "log.flush.scheduler.interval.ms", "log.roll.ms",
        "log.roll.jitter.ms", "log.retention.ms", "log.retention.bytes", "log.retention.check.interval.ms",
        "log.segment.delete.delay.ms", "log.cleaner.dedupe.buffer.size", "log.cleaner.backoff.ms",
        "log.cleaner.delete.retention.ms", "log.cleaner.min.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms",
        "log.message.timestamp.before.max.ms", "log.message.timestamp.after.max.ms", "replica.lag.time.max.ms",
        "replica.alter.log.dirs.io.max.bytes.per.second", "replica.dormant.after.ms",
        "replica.dormant.retry.horizon.ms",
        "offsets.retention.check.interval.ms", "queued.max.request.bytes", "connections.max.idle.ms")},
    "log.cleaner.min.cleanable.ratio": ConfigType.DOUBLE,
    "log.cleanup.policy": ConfigType.LIST,
}
# The `.ms` key each coarse spelling stands in for.
_COARSE_FOR = {"log.retention.minutes": "log.retention.ms", "log.retention.hours": "log.retention.ms",
               "log.roll.hours": "log.roll.ms", "log.roll.jitter.hours": "log.roll.jitter.ms"}


def _broker_source(broker: BrokerConfig, key: ConfigKey, value: str) -> ConfigSource:
    """STATIC_BROKER_CONFIG for a key given in server.properties (itself or a coarse spelling of
    it), whatever its value, or one set otherwise to a value other than Kafka's default."""
    given = {name for name, _ in broker.given}
    if key.name in given or any(_COARSE_FOR[c] == key.name for c in given & set(_COARSE_FOR)):
        return ConfigSource.STATIC_BROKER_CONFIG
    return ConfigSource.STATIC_BROKER_CONFIG if value != render(key.default) else ConfigSource.DEFAULT_CONFIG


def describe_topic(broker: BrokerConfig, overrides: Mapping[str, str],
                   names: Iterable[str] | None = None) -> list[ConfigEntry]:
    """Every topic config (or just `names`, unknown ones skipped as Kafka does), effective value first.

    Source: the topic's override (DYNAMIC_TOPIC_CONFIG), else the broker's setting when it
    differs from Kafka's default (STATIC_BROKER_CONFIG), else DEFAULT_CONFIG; synonyms list
    the broker key behind each topic config, as Kafka does with include_synonyms.
    """
    wanted = None if names is None else set(names)
    entries: list[ConfigEntry] = []
    for topic_name, key in sorted(TOPIC_KEYS.items()):
        if wanted is not None and topic_name not in wanted:
            continue
        broker_value = render(getattr(broker, key.name.replace(".", "_")))
        default_value = render(key.default)
        synonyms: list[Synonym] = []
        if topic_name in overrides:
            synonyms.append(Synonym(topic_name, overrides[topic_name], ConfigSource.DYNAMIC_TOPIC_CONFIG))
        if _broker_source(broker, key, broker_value) is ConfigSource.STATIC_BROKER_CONFIG:
            synonyms.append(Synonym(key.name, broker_value, ConfigSource.STATIC_BROKER_CONFIG))
        synonyms.append(Synonym(key.name, default_value, ConfigSource.DEFAULT_CONFIG))
        entries.append(ConfigEntry(topic_name, synonyms[0].value, synonyms[0].source, _type_of(key), key.doc,
                                   tuple(synonyms)))
    for topic_name, (default, kind, doc) in sorted(_PASSIVE.items()):
        if wanted is not None and topic_name not in wanted:
            continue
        value, source = (overrides[topic_name], ConfigSource.DYNAMIC_TOPIC_CONFIG) if topic_name in overrides \
            else (default, ConfigSource.DEFAULT_CONFIG)
        entries.append(ConfigEntry(topic_name, value, source, kind, doc, (Synonym(topic_name, value, source),)))
    return entries


def describe_broker(broker: BrokerConfig, names: Iterable[str] | None = None) -> list[ConfigEntry]:
    """The broker's configs (read-only: rafka has no dynamic broker configs yet), typed as
    Kafka's KafkaConfig types them, sorted by name. A key given in server.properties is
    STATIC_BROKER_CONFIG (Kafka's ConfigSource 4) even at its default value. The coarse
    spellings `log.retention.hours`/`.minutes`, `log.roll.hours` and `log.roll.jitter.hours`
    are listed as Kafka lists them: as given, else their default (none for the minutes)."""
    wanted = None if names is None else set(names)
    given = dict(broker.given)
    entries = []
    for key in BROKER_KEYS:
        if wanted is not None and key.name not in wanted:
            continue
        value = render(getattr(broker, key.name.replace(".", "_")))
        source = _broker_source(broker, key, value)
        entries.append(ConfigEntry(key.name, value, source, BROKER_CONFIG_TYPES[key.name], key.doc,
                                   (Synonym(key.name, value, source),), read_only=True))
    for name, default in COARSE_UNIT_DEFAULTS.items():
        if wanted is not None and name not in wanted:
            continue
        value, source = (given[name], ConfigSource.STATIC_BROKER_CONFIG) if name in given else (
            None if default is None else str(default), ConfigSource.DEFAULT_CONFIG)
        entries.append(ConfigEntry(name, value, source, BROKER_CONFIG_TYPES[name],
                                   f"Retention or roll time in coarser units; {_COARSE_FOR[name]} wins when set.",
                                   (Synonym(name, value, source),), read_only=True))
    return sorted(entries, key=lambda e: e.name)


def validate_overrides(overrides: Mapping[str, str]) -> None:
    """InvalidConfigError for an unknown topic config or a bad value (Kafka's INVALID_CONFIG)."""
    LogConfig().with_overrides(overrides)


def apply_incremental(current: Mapping[str, str], ops: Iterable[tuple[str, int, str | None]]) -> dict[str, str]:
    """A topic's overrides after IncrementalAlterConfigs operations (name, op, value).

    SET replaces, DELETE removes the override (back to the broker default), APPEND and SUBTRACT
    add or remove items of a list config (cleanup.policy, the throttled-replica lists), starting
    from the effective value. A name given twice, or APPEND/SUBTRACT of a non-list, is refused.
    """
    out = dict(current)
    seen: set[str] = set()
    for name, op, value in ops:
        if name in seen:
            raise InvalidRequestError(f"Error due to duplicate config keys: {name}")
        seen.add(name)
        try:
            operation = AlterOp(op)
        except ValueError:
            raise InvalidRequestError(f"Unknown config operation {op} for {name}") from None
        if operation is AlterOp.SET:
            if value is None:
                raise InvalidRequestError(f"Null value not supported for: {name}")
            out[name] = value
        elif operation is AlterOp.DELETE:
            out.pop(name, None)
        else:
            key = TOPIC_KEYS.get(name)
            is_list = (key is not None and isinstance(key.default, tuple)) or \
                (name in _PASSIVE and _PASSIVE[name][1] is ConfigType.LIST)
            if not is_list:
                raise InvalidConfigError(f"Config value append is not allowed for config key: {name}"
                                         if operation is AlterOp.APPEND else
                                         f"Config value subtract is not allowed for config key: {name}")
            if name in out:
                items = [v for v in out[name].split(",") if v]
            elif key is not None:
                items = list(key.default)
            else:
                items = [v for v in _PASSIVE[name][0].split(",") if v]
            given = [v.strip() for v in (value or "").split(",") if v.strip()]
            if operation is AlterOp.APPEND:
                items += [v for v in given if v not in items]
            else:
                items = [v for v in items if v not in given]
            out[name] = ",".join(items)
    return out
