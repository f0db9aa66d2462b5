"""Topic configs through the admin clients, as kafka-configs.sh uses them: describe every
config with its source, alter them (legacy and incremental), refuse bad ones, and the
topic's replicas apply a change at once."""
from __future__ import annotations

import uuid

from tests.interop.clients import create_topic
from tests.waiting import wait_until


def test_describe_and_alter_with_kafka_python(bootstrap):
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType

    topic = f"configs-kp-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, 1)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                            configs={"retention.ms": "123456", "cleanup.policy": "compact"})])
        modified = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])["topic"][topic]
        assert {name: entry["value"] for name, entry in modified.items()} == {
            "retention.ms": "123456", "cleanup.policy": "compact"}
        everything = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)],
                                            config_filter="all")["topic"][topic]
        assert everything["segment.bytes"]["value"] == str(1 << 30) and "compression.type" in everything
    finally:
        admin.close()


def test_incremental_alter_is_applied_by_the_replicas_at_once(bootstrap):
    from confluent_kafka import KafkaError, KafkaException, Producer
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                       ConfigSource)

    topic = f"configs-ck-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, 1)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("max.message.bytes", "1000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND)])
    admin.incremental_alter_configs([resource])[resource].result(30)
    described = admin.describe_configs([ConfigResource("topic", topic)])
    configs = list(described.values())[0].result(30)
    assert configs["max.message.bytes"].value == "1000"
    assert configs["max.message.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["cleanup.policy"].value == "delete,compact"
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value

    def too_large_is_refused() -> bool:
        errors: list = []
        producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": False, "retries": 0})
        producer.produce(topic, b"k" , b"x" * 2000, on_delivery=lambda err, _m: errors.append(err))
        producer.flush(30)
        return bool(errors) and errors[0] is not None and errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE

    wait_until(too_large_is_refused, timeout_s=30, message="the new max.message.bytes applied by the replica")

    back = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("max.message.bytes", None, incremental_operation=AlterConfigOpType.DELETE)])
    admin.incremental_alter_configs([back])[back].result(30)
    configs = list(admin.describe_configs([ConfigResource("topic", topic)]).values())[0].result(30)
    assert configs["max.message.bytes"].value == "1048588"

    bad = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)])
    try:
        admin.incremental_alter_configs([bad])[bad].result(30)
        raise AssertionError("a bad retention.ms was accepted")
    except KafkaException as e:
        assert e.args[0].code() == KafkaError.INVALID_CONFIG
    missing = ConfigResource("topic", "no-such-topic-" + uuid.uuid4().hex[:6], incremental_configs=[
        ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET)])
    try:
        admin.incremental_alter_configs([missing])[missing].result(30)
        raise AssertionError("an unknown topic was altered")
    except KafkaException as e:
        assert e.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_subtracting_delete_from_cleanup_policy_leaves_it_empty_as_kafka_allows(bootstrap):
    """confluent-kafka-python's own integration test SUBTRACTs `delete` from `[delete]`; Kafka's
    list validator accepts the empty list (no retention, no compaction)."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource

    topic = f"configs-empty-policy-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, 1)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        subtract = ConfigResource("topic", topic, incremental_configs=[
            ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SUBTRACT)])
        admin.incremental_alter_configs([subtract])[subtract].result(30)
        configs = list(admin.describe_configs([ConfigResource("topic", topic)]).values())[0].result(30)
        assert configs["cleanup.policy"].value == ""
        assert configs["cleanup.policy"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
        append = ConfigResource("topic", topic, incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND)])
        admin.incremental_alter_configs([append])[append].result(30)
        configs = list(admin.describe_configs([ConfigResource("topic", topic)]).values())[0].result(30)
        assert configs["cleanup.policy"].value == "compact"
    finally:
        admin.delete_topics([topic])[topic].result(30)
