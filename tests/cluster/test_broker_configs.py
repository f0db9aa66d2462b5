"""DescribeConfigs of a broker started with a server.properties file, through the admin clients
of confluent-kafka and kafka-python: keys set in the file are STATIC_BROKER_CONFIG even at Kafka's
default value, types are Kafka's, and a full listing carries the coarse retention keys."""
from __future__ import annotations

import os
import signal

from tests.cluster.test_crash_restart import free_port, group_members, rafka, up_detached

PROPERTIES = """\
broker.id=0
message.max.bytes=1048588
num.partitions=3
log.retention.hours=72
"""


def test_broker_configs_from_server_properties_are_static_and_typed(tmp_path):
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource as KPConfigResource, ConfigResourceType

    config = tmp_path / "server.properties"
    config.write_text(PROPERTIES)
    data_dir = str(tmp_path / "rafka")
    bootstrap, pid = up_detached(data_dir, free_port(), config=config)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        resource = ConfigResource("broker", "0")
        configs = admin.describe_configs([resource])[resource].result(30)
        assert {n: (configs[n].value, configs[n].source) for n in (
            "broker.id", "message.max.bytes", "num.partitions", "log.retention.hours", "log.retention.ms",
            "log.segment.bytes")} == {
            "broker.id": ("0", ConfigSource.STATIC_BROKER_CONFIG.value),
            "message.max.bytes": ("1048588", ConfigSource.STATIC_BROKER_CONFIG.value),
            "num.partitions": ("3", ConfigSource.STATIC_BROKER_CONFIG.value),
            "log.retention.hours": ("72", ConfigSource.STATIC_BROKER_CONFIG.value),
            "log.retention.ms": (str(72 * 3_600_000), ConfigSource.STATIC_BROKER_CONFIG.value),
            "log.segment.bytes": (str(1 << 30), ConfigSource.DEFAULT_CONFIG.value)}
        assert "log.retention.minutes" in configs and configs["log.retention.minutes"].value is None

        kp = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            broker = KPConfigResource(ConfigResourceType.BROKER, "0")
            static = kp.describe_configs([broker], config_filter="static")["broker"]["0"]
            everything = kp.describe_configs([broker], config_filter="all")["broker"]["0"]
        finally:
            kp.close()
        assert {"broker.id", "message.max.bytes", "num.partitions", "log.retention.hours"} <= set(static)
        assert static["num.partitions"]["config_type"] == "INT"
        assert "log.segment.bytes" not in static
        assert {"log.retention.hours", "log.retention.minutes", "log.retention.ms", "log.segment.bytes"} <= set(
            everything)
    finally:
        rafka("down", "--data-dir", data_dir)
        if group_members(pid):
            os.killpg(pid, signal.SIGKILL)
