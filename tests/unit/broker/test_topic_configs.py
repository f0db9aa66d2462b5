"""Topic configs as DescribeConfigs shows them and IncrementalAlterConfigs changes them."""
from __future__ import annotations

import pytest

from rafka.common.config import BrokerConfig, LogConfig
from rafka.common.errors import InvalidConfigError, InvalidRequestError
from rafka.common.topic_configs import (
    AlterOp, ConfigSource, ConfigType, apply_incremental, describe_broker, describe_topic, validate_overrides,
)


def by_name(entries):
    return {e.name: e for e in entries}


def test_every_topic_config_is_described_with_its_source_and_synonyms():
    broker = BrokerConfig.from_mapping({"log.retention.hours": "1"})
    entries = by_name(describe_topic(broker, {"cleanup.policy": "compact", "segment.bytes": "1048576"}))
    assert {"retention.ms", "segment.bytes", "cleanup.policy", "compression.type", "max.message.bytes",
            "min.cleanable.dirty.ratio", "message.timestamp.type", "delete.retention.ms"} <= set(entries)
    policy = entries["cleanup.policy"]
    assert (policy.value, policy.source, policy.type) == ("compact", ConfigSource.DYNAMIC_TOPIC_CONFIG, ConfigType.LIST)
    assert [(s.name, s.value, s.source) for s in policy.synonyms] == [
        ("cleanup.policy", "compact", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ("log.cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG)]
    retention = entries["retention.ms"]
    assert (retention.value, retention.source, retention.type) == ("3600000", ConfigSource.STATIC_BROKER_CONFIG,
                                                                   ConfigType.LONG)
    assert entries["segment.bytes"].type == ConfigType.INT
    assert entries["min.cleanable.dirty.ratio"].value == "0.5"
    assert entries["min.cleanable.dirty.ratio"].type == ConfigType.DOUBLE
    assert entries["compression.type"].value == "producer"
    assert entries["max.message.bytes"].synonyms[-1].name == "message.max.bytes"


def test_chosen_keys_only_and_unknown_keys_skipped():
    entries = describe_topic(BrokerConfig(), {}, ["retention.ms", "no.such.config"])
    assert [e.name for e in entries] == ["retention.ms"]


def test_broker_configs_are_read_only():
    entries = by_name(describe_broker(BrokerConfig(broker_id=3), ["broker.id", "log.retention.ms"]))
    assert entries["broker.id"].value == "3" and entries["broker.id"].read_only
    assert entries["log.retention.ms"].source == ConfigSource.DEFAULT_CONFIG


def test_incremental_operations():
    current = {"retention.ms": "1000"}
    assert apply_incremental(current, [("retention.ms", AlterOp.SET, "2000")]) == {"retention.ms": "2000"}
    assert apply_incremental(current, [("retention.ms", AlterOp.DELETE, None)]) == {}
    assert apply_incremental(current, [("cleanup.policy", AlterOp.APPEND, "compact")]) == {
        "retention.ms": "1000", "cleanup.policy": "delete,compact"}
    assert apply_incremental({"cleanup.policy": "compact,delete"}, [("cleanup.policy", AlterOp.SUBTRACT,
                                                                     "delete")]) == {"cleanup.policy": "compact"}
    assert current == {"retention.ms": "1000"}  # the input is not changed


@pytest.mark.parametrize("ops,error", [
    ([("retention.ms", AlterOp.APPEND, "5")], InvalidConfigError),
    ([("retention.ms", AlterOp.SET, "1"), ("retention.ms", AlterOp.SET, "2")], InvalidRequestError),
    ([("retention.ms", 9, "1")], InvalidRequestError),
    ([("retention.ms", AlterOp.SET, None)], InvalidRequestError),
])
def test_bad_operations_are_refused(ops, error):
    with pytest.raises(error):
        apply_incremental({}, ops)


def test_validation_is_createtopics_validation():
    validate_overrides({"retention.ms": "5", "compression.type": "zstd"})
    with pytest.raises(InvalidConfigError):
        validate_overrides({"retention.ms": "soon"})
    with pytest.raises(InvalidConfigError):
        validate_overrides({"no.such.config": "1"})


def test_subtracting_the_last_cleanup_policy_leaves_an_empty_list_which_is_valid():
    """Kafka 3.9's cleanup.policy validator (ConfigDef.ValidList.in("compact", "delete")) checks
    each item and so accepts an empty list: neither retention nor compaction; only segments
    below the log start offset go (UnifiedLog.deleteOldSegments), and DeleteRecords is refused."""
    emptied = apply_incremental({}, [("cleanup.policy", AlterOp.SUBTRACT, "delete")])
    assert emptied == {"cleanup.policy": ""}
    validate_overrides(emptied)
    config = LogConfig().with_overrides(emptied)
    assert config.cleanup_policy == () and not config.delete and not config.compact
    assert by_name(describe_topic(BrokerConfig(), emptied))["cleanup.policy"].value == ""
    assert BrokerConfig.from_mapping({"log.cleanup.policy": ""}).log_cleanup_policy == ()
    with pytest.raises(InvalidConfigError, match="compact, delete"):
        validate_overrides({"cleanup.policy": "delete,forever"})


def test_broker_keys_set_in_server_properties_are_static_and_typed_as_kafka_types_them():
    """Kafka's DescribeConfigs of a broker: a key given in server.properties is STATIC_BROKER_CONFIG
    even when its value is Kafka's default; types are KafkaConfig's (num.partitions is an INT,
    offsets.topic.replication.factor a SHORT); the coarse retention/roll keys are listed too."""
    broker = BrokerConfig.from_mapping({"broker.id": "0", "message.max.bytes": "1048588", "num.partitions": "3",
                                        "log.retention.hours": "72"})
    entries = by_name(describe_broker(broker))
    rows = {name: (entries[name].value, entries[name].source, entries[name].type) for name in (
        "broker.id", "message.max.bytes", "num.partitions", "log.retention.hours", "log.retention.minutes",
        "log.retention.ms", "log.segment.bytes", "offsets.topic.replication.factor", "log.roll.hours",
        "log.cleanup.policy", "log.dirs")}
    assert rows == {
        "broker.id": ("0", ConfigSource.STATIC_BROKER_CONFIG, ConfigType.INT),
        "message.max.bytes": ("1048588", ConfigSource.STATIC_BROKER_CONFIG, ConfigType.INT),
        "num.partitions": ("3", ConfigSource.STATIC_BROKER_CONFIG, ConfigType.INT),
        "log.retention.hours": ("72", ConfigSource.STATIC_BROKER_CONFIG, ConfigType.INT),
        "log.retention.minutes": (None, ConfigSource.DEFAULT_CONFIG, ConfigType.INT),
        "log.retention.ms": (str(72 * 3_600_000), ConfigSource.STATIC_BROKER_CONFIG, ConfigType.LONG),
        "log.segment.bytes": (str(1 << 30), ConfigSource.DEFAULT_CONFIG, ConfigType.INT),
        "offsets.topic.replication.factor": ("3", ConfigSource.DEFAULT_CONFIG, ConfigType.SHORT),
        "log.roll.hours": ("168", ConfigSource.DEFAULT_CONFIG, ConfigType.INT),
        "log.cleanup.policy": ("delete", ConfigSource.DEFAULT_CONFIG, ConfigType.LIST),
        "log.dirs": ("/tmp/kafka-logs", ConfigSource.DEFAULT_CONFIG, ConfigType.STRING),
    }
    assert [e.name for e in describe_broker(broker, ["log.retention.hours", "nope"])] == ["log.retention.hours"]
    # A topic's synonym for a broker key given in server.properties is static too.
    synonyms = by_name(describe_topic(broker, {}))["max.message.bytes"].synonyms
    assert [(s.name, s.source) for s in synonyms] == [("message.max.bytes", ConfigSource.STATIC_BROKER_CONFIG),
                                                      ("message.max.bytes", ConfigSource.DEFAULT_CONFIG)]
