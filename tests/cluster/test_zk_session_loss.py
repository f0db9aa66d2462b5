"""A broker cut off from ZooKeeper long enough to lose its session, while its process lives
on: it loses its leaderships, never acknowledges an acks=all write it cannot replicate, and
when it has a new session it registers again and rejoins the ISR as a follower."""
from __future__ import annotations

import ray
from kazoo.client import KazooClient

from rafka.cluster import Cluster, find_broker
from rafka.net.client import KafkaConnection
from rafka.partition_worker.record_batch import Record, encode_batch
from tests.waiting import wait_until
from tools.failover_drill import drill_config

METADATA, PRODUCE, CREATE_TOPICS = 3, 0, 19
TOPIC = "cut-off"


def partition(address: str) -> dict | None:
    with KafkaConnection.to(address) as conn:
        meta = conn.request(METADATA, 12, {"topics": [{"topic_id": None, "name": TOPIC}],
                                           "allow_auto_topic_creation": False,
                                           "include_topic_authorized_operations": False})["topics"][0]
    return meta["partitions"][0] if meta["error_code"] == 0 and meta["partitions"] else None


def produce_acks_all(address: str, value: bytes, timeout_ms: int = 3000) -> int:
    body = {"transactional_id": None, "acks": -1, "timeout_ms": timeout_ms, "topic_data": [
        {"name": TOPIC, "partition_data": [{"index": 0, "records": encode_batch(
            [Record(0, 1_700_000_000_000, None, value)])}]}]}
    with KafkaConnection.to(address) as conn:
        return conn.request(PRODUCE, 9, body)["responses"][0]["partition_responses"][0]["error_code"]


def expire_session(cluster: Cluster, broker_id: int) -> None:
    """ZooKeeper's own idiom: a second client joins the broker's session and closes it."""
    credentials = ray.get(find_broker(cluster.namespace, broker_id).zk_session_credentials.remote(), timeout=30)
    intruder = KazooClient(hosts=cluster.zookeeper_connect, client_id=tuple(credentials))
    intruder.start(timeout=10)
    intruder.stop()
    intruder.close()


def test_a_leader_that_loses_its_zookeeper_session_steps_down_and_rejoins(rafka_cluster, tmp_path):
    cluster = Cluster(tmp_path / "cut", brokers=3, first_port=0, config=drill_config(), namespace="rafka-cut")
    cluster.start()
    try:
        addresses = {b: h.address for b, h in cluster.brokers.items()}
        with KafkaConnection.to(addresses[0]) as conn:
            created = conn.request(CREATE_TOPICS, 5, {"topics": [{
                "name": TOPIC, "num_partitions": 1, "replication_factor": 3, "assignments": [],
                "configs": [{"name": "min.insync.replicas", "value": "2"}]}], "timeout_ms": 30000,
                "validate_only": False})
            assert created["topics"][0]["error_code"] == 0, created
        state = wait_until(lambda: (p := partition(addresses[0])) and sorted(p["isr_nodes"]) == [0, 1, 2] and p,
                           timeout_s=60, message="every replica in the ISR")
        leader = state["leader_id"]
        other = next(b for b in addresses if b != leader)
        # (the followers' first fetches may still be on their way: a write that times out is retried, as a client would)
        wait_until(lambda: produce_acks_all(addresses[leader], b"before") == 0, timeout_s=60,
                   message="an acks=all write acknowledged by the first leader")

        expire_session(cluster, leader)
        moved = wait_until(lambda: (p := partition(addresses[other])) and p["leader_id"] not in (-1, leader) and p,
                           timeout_s=30, message="leadership moved off the cut-off broker")
        assert moved["leader_epoch"] > state["leader_epoch"]
        # Whatever the cut-off broker believes now, it cannot acknowledge an acks=all write.
        assert produce_acks_all(addresses[leader], b"to-the-old-leader") != 0
        wait_until(lambda: produce_acks_all(addresses[moved["leader_id"]], b"to-the-new-leader") == 0, timeout_s=60,
                   message="an acks=all write acknowledged by the new leader")

        back = wait_until(lambda: (p := partition(addresses[other])) and sorted(p["isr_nodes"]) == [0, 1, 2] and p,
                          timeout_s=60, message="the cut-off broker back in the ISR")
        assert back["leader_id"] == moved["leader_id"]
        assert leader in {b["node_id"] for b in _brokers(addresses[other])}
    finally:
        cluster.stop()


def _brokers(address: str) -> list[dict]:
    with KafkaConnection.to(address) as conn:
        return conn.request(METADATA, 12, {"topics": [], "allow_auto_topic_creation": False,
                                           "include_topic_authorized_operations": False})["brokers"]
