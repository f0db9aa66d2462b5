"""The options of Spark's Kafka source and sink, parsed and checked once, into frozen values.

Names and defaults are Spark's (`KafkaSourceProvider`, Spark 4); option names are
case-insensitive, as Spark's are. An option the Kafka source does not know is an error that
names it (with the nearest known name), so a misspelt `startingOffset` fails the job
instead of silently reading from the default. Pure: nothing here touches the network.
"""
from __future__ import annotations

import difflib
import logging
import re
from dataclasses import dataclass, field
from typing import Mapping

from rafka.common.metadata_wait import MAX_BLOCK_MS_DEFAULT
from rafka.common.types import TopicPartition
from rafka.spark_bridge.client_settings import KAFKA_PREFIX, max_block_ms, strip_prefix, to_librdkafka
from rafka.spark_bridge.offsets_json import EARLIEST, LATEST, parse_assign, parse_partition_numbers

log = logging.getLogger(__name__)

# Spark's spelling of every option, by its lower-case key (Spark lower-cases keys).
_READ_OPTIONS = (
    "subscribe", "subscribePattern", "assign", "startingOffsets", "endingOffsets", "startingTimestamp",
    "endingTimestamp", "startingOffsetsByTimestamp", "endingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy", "failOnDataLoss", "kafkaConsumer.pollTimeoutMs",
    "fetchOffset.numRetries", "fetchOffset.retryIntervalMs", "maxOffsetsPerTrigger", "minOffsetsPerTrigger",
    "maxTriggerDelay", "minPartitions", "maxRecordsPerPartition", "groupIdPrefix", "includeHeaders",
)
_WRITE_OPTIONS = ("topic",)
# Options Spark itself adds to a sink's options.
_SPARK_OPTIONS = ("checkpointLocation",)
SPELLING = {name.lower(): name for name in _READ_OPTIONS + _WRITE_OPTIONS + _SPARK_OPTIONS}

# `kafka.` settings Spark refuses, and why (KafkaSourceProvider's messages).
_UNSUPPORTED_READ = {
    "auto.offset.reset": "Instead set the source option 'startingOffsets' to 'earliest' or 'latest' to specify "
                         "where to start. Structured Streaming manages which offsets are consumed internally",
    "key.deserializer": "Keys are always deserialized as byte arrays; use DataFrame operations to convert them",
    "value.deserializer": "Values are always deserialized as byte arrays; use DataFrame operations to convert them",
    "enable.auto.commit": "Offsets are not committed to Kafka; the checkpoint holds them",
    "interceptor.classes": "Consumer interceptors are not supported",
}
_UNSUPPORTED_WRITE = {
    "key.serializer": "Keys are serialized with a byte-array serializer",
    "value.serializer": "Values are serialized with a byte-array serializer",
}
_STRATEGIES = ("subscribe", "subscribepattern", "assign")
DEFAULT_POLL_TIMEOUT_MS = 120_000  # Spark: spark.network.timeout, 120 s


class OptionError(ValueError):
    """An option that is unknown, misspelt, missing or out of range; the message names it."""


@dataclass(frozen=True)
class Subscription:
    """Which partitions to read: a list of topics, a topic regex, or fixed partitions."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[TopicPartition, ...] = ()

    def matches(self, topic: str) -> bool:
        """Whether `topic` belongs to the subscription (a pattern matches the whole name,
        as Java's `Pattern.matcher(..).matches()`; internal topics never match a pattern)."""
        if self.pattern is not None:
            return not topic.startswith("__") and re.fullmatch(self.pattern, topic) is not None
        if self.assigned:
            return any(tp.topic == topic for tp in self.assigned)
        return topic in self.topics


@dataclass(frozen=True)
class OffsetSpec:
    """Where a read starts or ends: `earliest`, `latest`, per-partition offsets (with -2/-1),
    one timestamp for all partitions, or per-partition timestamps."""

    kind: str  # "earliest" | "latest" | "offsets" | "timestamp" | "timestamps"
    per_partition: Mapping[TopicPartition, int] = field(default_factory=dict, hash=False)
    timestamp_ms: int | None = None


@dataclass(frozen=True)
class ReadOptions:
    bootstrap_servers: str
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    client: Mapping[str, str] = field(hash=False)  # librdkafka settings from `kafka.*`
    fail_on_data_loss: bool = True
    include_headers: bool = False
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    group_id_prefix: str = "spark-kafka-source"
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS
    fetch_offset_retries: int = 3
    fetch_offset_retry_interval_ms: int = 1000
    timestamp_strategy: str = "error"  # startingOffsetsByTimestampStrategy: "error" | "latest"


@dataclass(frozen=True)
class WriteOptions:
    bootstrap_servers: str
    topic: str | None
    client: Mapping[str, str] = field(hash=False)
    max_block_ms: int = MAX_BLOCK_MS_DEFAULT  # kafka.max.block.ms: the wait for a topic's metadata


def check_names(options: Mapping[str, str]) -> None:
    """Refuse any option that is neither Spark's Kafka option nor `kafka.`-prefixed."""
    for key in options:
        lower = key.lower()
        if lower in SPELLING or lower.startswith(KAFKA_PREFIX):
            continue
        near = difflib.get_close_matches(lower, list(SPELLING), n=1, cutoff=0.75)
        hint = f" (did you mean '{SPELLING[near[0]]}'?)" if near else ""
        raise OptionError(f"Unknown option '{key}' for the Kafka data source{hint}; known options: "
                          f"{', '.join(sorted(SPELLING.values()))} and kafka.-prefixed client settings")


def parse_read_options(options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    """Spark's Kafka source options → `ReadOptions`; `OptionError` names what is wrong."""
    check_names(options)
    opts = _lowered(options)
    client = _client_settings(opts, _UNSUPPORTED_READ)
    starting = _starting(opts, streaming)
    ending = _ending(opts, streaming)
    strategy = opts.get("startingoffsetsbytimestampstrategy", "error").lower()
    if strategy not in ("error", "latest"):
        raise OptionError(f"Option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', got {strategy!r}")
    prefix_default = "spark-kafka-source" if streaming else "spark-kafka-relation"
    return ReadOptions(
        bootstrap_servers=_bootstrap(opts, "consumer"), subscription=_subscription(opts),
        starting=starting, ending=ending, client=client,
        fail_on_data_loss=_bool(opts, "failondataloss", True), include_headers=_bool(opts, "includeheaders", False),
        min_partitions=_positive(opts, "minpartitions"),
        max_records_per_partition=_positive(opts, "maxrecordsperpartition"),
        max_offsets_per_trigger=_positive(opts, "maxoffsetspertrigger"),
        min_offsets_per_trigger=_positive(opts, "minoffsetspertrigger"),
        max_trigger_delay_ms=_duration_ms(opts.get("maxtriggerdelay", "15m")),
        group_id_prefix=opts.get("groupidprefix", prefix_default),
        poll_timeout_ms=_positive(opts, "kafkaconsumer.polltimeoutms") or DEFAULT_POLL_TIMEOUT_MS,
        fetch_offset_retries=_positive(opts, "fetchoffset.numretries") or 3,
        fetch_offset_retry_interval_ms=_positive(opts, "fetchoffset.retryintervalms") or 1000,
        timestamp_strategy=strategy)


def parse_write_options(options: Mapping[str, str]) -> WriteOptions:
    """Spark's Kafka sink options → `WriteOptions` (read-side options are allowed and unused,
    as Spark allows one options table for both directions)."""
    check_names(options)
    opts = _lowered(options)
    client = _client_settings(opts, _UNSUPPORTED_WRITE)
    topic = opts.get("topic")
    if topic is not None and not topic.strip():
        raise OptionError("Option 'topic' must not be empty")
    return WriteOptions(bootstrap_servers=_bootstrap(opts, "producer"), topic=topic, client=client,
                        max_block_ms=max_block_ms(strip_prefix(opts)))


# -- pieces -------------------------------------------------------------------------------
def _lowered(options: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): str(v) for k, v in options.items()}


def _bootstrap(opts: Mapping[str, str], role: str) -> str:
    servers = opts.get("kafka.bootstrap.servers", "").strip()
    if not servers:
        raise OptionError(f"Option 'kafka.bootstrap.servers' must be specified for configuring Kafka {role}")
    return servers


def _client_settings(opts: Mapping[str, str], unsupported: Mapping[str, str]) -> dict[str, str]:
    settings = strip_prefix(opts)
    for name, why in unsupported.items():
        if name in settings:
            raise OptionError(f"Kafka option '{name}' is not supported. {why}.")
    if "group.id" in settings:
        log.warning("kafka.group.id is set: concurrent queries or sources with the same group id may interfere")
    settings.pop("bootstrap.servers", None)
    return to_librdkafka(settings)


def _subscription(opts: Mapping[str, str]) -> Subscription:
    given = [s for s in _STRATEGIES if s in opts]
    names = "subscribe, subscribePattern, assign"
    if not given:
        raise OptionError(f"One of the following options must be specified for Kafka source: {names}. "
                          "See the docs for more details.")
    if len(given) > 1:
        raise OptionError(f"Only one of the following options can be specified for Kafka source: {names}. "
                          "See the docs for more details.")
    value = opts[given[0]]
    if given[0] == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise OptionError(f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'")
        return Subscription(topics=topics)
    if given[0] == "subscribepattern":
        if not value.strip():
            raise OptionError("Pattern to subscribe is empty as specified value for option 'subscribePattern' is ''")
        try:
            re.compile(value)
        except re.error as e:
            raise OptionError(f"Option 'subscribePattern' is not a valid regular expression: {e}") from None
        return Subscription(pattern=value.strip())
    assigned = parse_assign(value)
    if not assigned:
        raise OptionError(f"No topic-partitions to assign as specified value for option 'assign' is '{value}'")
    return Subscription(assigned=tuple(assigned))


def _starting(opts: Mapping[str, str], streaming: bool) -> OffsetSpec:
    spec = _offset_spec(opts, "starting", default="latest" if streaming else "earliest")
    return spec if streaming else _batch_bound(spec, "starting", refused="latest", sentinel=LATEST)


def _ending(opts: Mapping[str, str], streaming: bool) -> OffsetSpec:
    if streaming:
        for name in ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp"):
            if name in opts:
                raise OptionError(f"{SPELLING[name]} option not valid in streaming queries")
        return OffsetSpec("latest")
    return _batch_bound(_offset_spec(opts, "ending", default="latest"), "ending", refused="earliest",
                        sentinel=EARLIEST)


def _batch_bound(spec: OffsetSpec, side: str, refused: str, sentinel: int) -> OffsetSpec:
    """Spark's batch rule: a start can't be latest and an end can't be earliest, as a word
    or as a partition's -1/-2."""
    if spec.kind == refused:
        raise OptionError(f"{side} offset can't be {refused} for batch queries on Kafka")
    for tp, offset in spec.per_partition.items():
        if spec.kind == "offsets" and offset == sentinel:
            raise OptionError(f"{side}Offsets for {tp} can't be {refused} for batch queries on Kafka")
    return spec


def _offset_spec(opts: Mapping[str, str], side: str, default: str) -> OffsetSpec:
    """Spark's precedence: <side>Timestamp, then <side>OffsetsByTimestamp, then <side>Offsets."""
    if f"{side}timestamp" in opts:
        text = opts[f"{side}timestamp"].strip()
        if not text.lstrip("-").isdigit() or int(text) < 0:
            raise OptionError(f"Option '{side}Timestamp' must be a timestamp in milliseconds, got {text!r}")
        return OffsetSpec("timestamp", timestamp_ms=int(text))
    if f"{side}offsetsbytimestamp" in opts:
        return OffsetSpec("timestamps", per_partition=parse_partition_numbers(
            opts[f"{side}offsetsbytimestamp"], "timestamp"))
    text = opts.get(f"{side}offsets", default).strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetSpec(text.lower())
    try:
        return OffsetSpec("offsets", per_partition=parse_partition_numbers(text))
    except ValueError as e:
        raise OptionError(f"Option '{side}Offsets': {e}") from None


def _bool(opts: Mapping[str, str], key: str, default: bool) -> bool:
    text = opts.get(key)
    if text is None:
        return default
    if text.strip().lower() not in ("true", "false"):
        raise OptionError(f"Option '{SPELLING[key]}' must be true or false, got {text!r}")
    return text.strip().lower() == "true"


def _positive(opts: Mapping[str, str], key: str) -> int | None:
    text = opts.get(key)
    if text is None:
        return None
    if not text.strip().isdigit() or int(text) <= 0:
        raise OptionError(f"Invalid value '{text}' for option '{SPELLING[key]}', must be a positive integer")
    return int(text)


_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h|d)?\s*$", re.IGNORECASE)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def _duration_ms(text: str) -> int:
    """Spark's duration strings for maxTriggerDelay ("15m", "30s", "500ms"); bare numbers are ms."""
    match = _DURATION.match(text)
    if not match:
        raise OptionError(f"Option 'maxTriggerDelay' must be a duration such as 15m or 30s, got {text!r}")
    return int(match.group(1)) * _UNIT_MS[(match.group(2) or "ms").lower()]
