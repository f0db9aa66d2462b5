"""Generated broker ids (broker.id=-1, Kafka's getOrGenerateBrokerId) against a real ZooKeeper,
and rack-aware replica placement seen through Metadata and DescribeCluster on a cluster of
three brokers on two racks whose ids were generated."""
from __future__ import annotations

import pytest

from rafka.common.config import BrokerConfig
from rafka.common.errors import StartupError
from rafka.coordinator.broker.broker_id import resolve_broker_id
from rafka.coordinator.zk import zk_data as zd
from rafka.coordinator.zk.zk_store import ZkStore
from rafka.partition_worker.log_dirs import stored_broker_ids

METADATA, CREATE_TOPICS, DESCRIBE_CLUSTER = 3, 19, 60


def test_broker_sequence_ids_count_up_from_one_across_sessions(zk_connect, zk_raw):
    with ZkStore(zk_connect) as first, ZkStore(zk_connect) as second:
        ids = [store.generate_broker_sequence_id() for store in (first, second, first, second)]
        assert ids == [1, 2, 3, 4]
        assert zk_raw.exists(zd.BROKER_SEQID_PATH).version == 4
        zk_raw.delete(zd.BROKER_SEQID_PATH)   # Kafka recreates a missing /brokers/seqid
        assert first.generate_broker_sequence_id() == 1


def test_a_broker_without_an_id_gets_one_from_zookeeper_and_keeps_it(zk_connect, zk_raw, tmp_path):
    config = BrokerConfig.from_mapping({"broker.id": "-1", "zookeeper.connect": zk_connect,
                                        "log.dirs": f"{tmp_path / 'a'},{tmp_path / 'b'}"})
    assert resolve_broker_id(config) == 1001
    cluster_id = zd.decode_cluster_id(zk_raw.get(zd.CLUSTER_ID_PATH)[0])
    for d in config.log_dirs:   # written at once, with the cluster's id
        text = (tmp_path / d / "meta.properties").read_text()
        assert "broker.id=1001" in text and f"cluster.id={cluster_id}" in text
    assert resolve_broker_id(config) == 1001            # from meta.properties: no new sequence id
    assert zk_raw.exists(zd.BROKER_SEQID_PATH).version == 1
    other = config.replace(log_dirs=(str(tmp_path / "c"),), reserved_broker_max_id=5000)
    assert resolve_broker_id(other) == 5002             # the next sequence id above its own reserve
    assert resolve_broker_id(config.replace(broker_id=1001, broker_id_generation_enable=False)) == 1001
    with pytest.raises(StartupError, match=r"^Stored node id 1001 doesn't match previous node id 7 in .*/a/meta"):
        resolve_broker_id(config.replace(broker_id=7))


def test_generated_brokers_on_two_racks_place_every_partition_on_both(rafka_cluster, zk_connect, zk_raw, tmp_path):
    """Three brokers of broker.id=-1 get 1001-1003; on racks a, b, b every partition of an RF=2
    topic has a replica on each rack (rack-unaware placement would pair 1002 and 1003 in one of
    three partitions, whatever its random start). Metadata and DescribeCluster name the racks.
    A broker stopped and started again on its log dir keeps its id (no new sequence id); the
    same log dir under a configured broker.id of 7 is refused with Kafka's message."""
    from rafka.cluster import Cluster, await_broker_released
    from rafka.net.client import KafkaConnection
    from tests.waiting import wait_until

    base = BrokerConfig.from_mapping({"broker.id": "-1", "zookeeper.connect": zk_connect, "broker.rack": "a",
                                      "zookeeper.session.timeout.ms": "6000", "auto.create.topics.enable": "false"})
    cluster = Cluster(tmp_path / "racks", brokers=1, first_port=0, config=base, namespace="rafka-racks")
    try:
        cluster.start()
        for index in (1, 2):
            cluster.start_broker(cluster.broker_config(index).replace(broker_rack="b"))
        assert sorted(cluster.brokers) == [1001, 1002, 1003]
        racks = {1001: "a", 1002: "b", 1003: "b"}
        with KafkaConnection.to(cluster.brokers[1002].address) as conn:
            created = conn.request(CREATE_TOPICS, 5, {"topics": [{
                "name": "racked", "num_partitions": 3, "replication_factor": 2, "assignments": [], "configs": []}],
                "timeout_ms": 30000, "validate_only": False})
            assert created["topics"][0]["error_code"] == 0, created

            def metadata() -> dict:
                return conn.request(METADATA, 12, {"topics": [{"topic_id": None, "name": "racked"}],
                                                   "allow_auto_topic_creation": False,
                                                   "include_topic_authorized_operations": False})

            meta = wait_until(lambda: (m := metadata())["topics"][0]["error_code"] == 0 and m, timeout_s=30,
                              message="the topic in the metadata")
            assert {b["node_id"]: b["rack"] for b in meta["brokers"]} == racks
            replicas = {p["partition_index"]: p["replica_nodes"] for p in meta["topics"][0]["partitions"]}
            assert sorted(replicas) == [0, 1, 2]
            for p, nodes in replicas.items():
                assert len(set(nodes)) == 2 and {racks[b] for b in nodes} == {"a", "b"}, (p, nodes)
            described = conn.request(DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False,
                                                           "endpoint_type": 1})
            assert {b["broker_id"]: b["rack"] for b in described["brokers"]} == racks
            assert described["controller_id"] in racks

        cluster.stop_broker(1003)
        assert await_broker_released(cluster.namespace, 1003)
        slot = cluster.broker_config(2)
        with pytest.raises(StartupError, match=r"^Stored node id 1003 doesn't match previous node id 7 in "
                                               r".*slot-2/logs/meta\.properties\. If you moved your data"):
            cluster.start_broker(slot.replace(broker_id=7))
        assert cluster.restart_broker(1003).broker_id == 1003
        assert stored_broker_ids(slot.log_dirs) == {f"{slot.log_dirs[0]}/meta.properties": 1003}
        assert zk_raw.exists(zd.BROKER_SEQID_PATH).version == 3   # no id generated for the restart
    finally:
        cluster.stop()
