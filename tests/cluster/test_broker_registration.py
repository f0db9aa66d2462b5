"""What a running broker leaves in ZooKeeper, with Kafka's paths and JSON shapes."""
from __future__ import annotations

import json

import pytest
from kazoo.client import KazooClient

from rafka.common.errors import StartupError


@pytest.fixture
def zk(rafka_cluster):
    client = KazooClient(hosts=rafka_cluster.zookeeper_connect, timeout=10)
    client.start(timeout=10)
    yield client
    client.stop()
    client.close()


def read_json(zk, path):
    data, stat = zk.get(path)
    return json.loads(data), stat


def test_broker_controller_and_cluster_znodes_have_kafkas_shapes(rafka_cluster, zk):
    broker, stat = read_json(zk, "/brokers/ids/0")
    assert stat.ephemeralOwner != 0
    assert broker["version"] == 5
    assert {"listener_security_protocol_map", "endpoints", "jmx_port", "port", "host", "version",
            "timestamp", "features"} <= set(broker)
    host, port = rafka_cluster.brokers[0].host, rafka_cluster.brokers[0].port
    assert broker["endpoints"] == [f"PLAINTEXT://{host}:{port}"]
    assert broker["host"] == host and broker["port"] == port
    controller, stat = read_json(zk, "/controller")
    assert controller["brokerid"] == 0 and controller["version"] in (1, 2) and stat.ephemeralOwner != 0
    epoch, _ = zk.get("/controller_epoch")
    assert int(epoch) >= 1
    cluster, _ = read_json(zk, "/cluster/id")
    assert cluster == {"version": "1", "id": rafka_cluster.cluster_id}
    assert len(cluster["id"]) == 22


def test_topic_and_partition_state_znodes(rafka_cluster, zk):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": rafka_cluster.bootstrap_servers})
    admin.create_topics([NewTopic("zk-shapes", 3, 1, config={"retention.ms": "3600000"})])["zk-shapes"].result(30)
    topic, _ = read_json(zk, "/brokers/topics/zk-shapes")
    assert topic["version"] == 3
    assert topic["partitions"] == {"0": [0], "1": [0], "2": [0]}
    assert len(topic["topic_id"]) == 22
    assert topic.get("adding_replicas", {}) == {} and topic.get("removing_replicas", {}) == {}
    for p in range(3):
        state, stat = read_json(zk, f"/brokers/topics/zk-shapes/partitions/{p}/state")
        assert stat.ephemeralOwner == 0  # persistent
        assert state["leader"] == 0 and state["isr"] == [0] and state["leader_epoch"] >= 0
        assert state["controller_epoch"] >= 1 and state["version"] in (1, 2)
    config, _ = read_json(zk, "/config/topics/zk-shapes")
    assert config == {"version": 1, "config": {"retention.ms": "3600000"}}


def test_second_broker_with_a_live_id_fails_clearly(rafka_cluster, tmp_path):
    from rafka.cluster import start_broker

    config = rafka_cluster.broker_config(0).replace(listeners=("PLAINTEXT://127.0.0.1:0",),
                                                     log_dirs=(str(tmp_path / "logs"),))
    with pytest.raises(StartupError, match=r"(?i)broker.id 0|broker id 0") as info:
        start_broker(config, namespace="rafka-duplicate", timeout_s=60)
    assert "already registered" in str(info.value)
