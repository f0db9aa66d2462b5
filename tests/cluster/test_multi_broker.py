"""Three brokers on loopback: leaders spread, each front end serves only its own leaders."""
from __future__ import annotations

import pytest

from rafka.net.client import KafkaConnection
from rafka.partition_worker.record_batch import Record, encode_batch

METADATA, PRODUCE, CREATE_TOPICS = 3, 0, 19


@pytest.fixture(scope="module")
def three_brokers(rafka_cluster, tmp_path_factory):
    """A second cluster (own ZooKeeper, own Ray namespace) inside the session's Ray."""
    from rafka.cluster import Cluster

    cluster = Cluster(tmp_path_factory.mktemp("three"), brokers=3, first_port=0, namespace="rafka-three")
    cluster.start()
    yield cluster
    cluster.stop()


def produce_to(address: str, topic: str, partition: int) -> int:
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 10000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": encode_batch(
            [Record(0, 1_700_000_000_000, b"k", b"v")])}]}]}
    with KafkaConnection.to(address) as conn:
        return conn.request(PRODUCE, 9, body)["responses"][0]["partition_responses"][0]["error_code"]


@pytest.fixture(scope="module")
def spread(three_brokers) -> str:
    """The topic "spread": 6 partitions, one replica each, made once for the tests that use it
    (each may run alone, or on a test worker of its own with its own cluster)."""
    with KafkaConnection.to(three_brokers.brokers[1].address) as conn:
        created = conn.request(CREATE_TOPICS, 5, {"topics": [{"name": "spread", "num_partitions": 6,
                                                              "replication_factor": 1, "assignments": [],
                                                              "configs": []}],
                                                  "timeout_ms": 30000, "validate_only": False})
    assert created["topics"][0]["error_code"] == 0
    return "spread"


def test_metadata_lists_every_broker_and_spreads_leaders(three_brokers, spread):
    with KafkaConnection.to(three_brokers.brokers[1].address) as conn:
        meta = conn.request(METADATA, 12, {"topics": [{"topic_id": None, "name": "spread"}],
                                           "allow_auto_topic_creation": False,
                                           "include_topic_authorized_operations": False})
    assert {b["node_id"] for b in meta["brokers"]} == {0, 1, 2}
    assert meta["controller_id"] in (0, 1, 2)
    leaders = {p["partition_index"]: p["leader_id"] for p in meta["topics"][0]["partitions"]}
    assert set(leaders.values()) == {0, 1, 2}


def test_front_end_refuses_partitions_led_elsewhere(three_brokers, spread):
    from tests.waiting import wait_until

    for handle in three_brokers.brokers.values():  # every broker has heard of the topic
        with KafkaConnection.to(handle.address) as conn:
            wait_until(lambda: conn.request(METADATA, 12, {
                "topics": [{"topic_id": None, "name": "spread"}], "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False})["topics"][0]["error_code"] == 0, timeout_s=30,
                message=f"broker {handle.broker_id} knows the topic")
    with KafkaConnection.to(three_brokers.brokers[0].address) as conn:
        meta = conn.request(METADATA, 12, {"topics": [{"topic_id": None, "name": "spread"}],
                                           "allow_auto_topic_creation": False,
                                           "include_topic_authorized_operations": False})
    for p in meta["topics"][0]["partitions"]:
        for broker_id, handle in three_brokers.brokers.items():
            code = produce_to(handle.address, "spread", p["partition_index"])
            expected = 0 if broker_id == p["leader_id"] else 6  # NOT_LEADER_OR_FOLLOWER
            assert code == expected, (p, broker_id)


def test_a_real_client_routes_by_leader_across_brokers(three_brokers, spread):
    from confluent_kafka import Consumer, Producer, TopicPartition

    bootstrap = three_brokers.bootstrap_servers
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": False, "acks": 1})
    for i in range(600):
        producer.produce("spread", b"m%d" % i, partition=i % 6)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "spread", "enable.auto.commit": False})
    consumer.assign([TopicPartition("spread", p, 0) for p in range(6)])
    import time
    wanted, values = {b"m%d" % i for i in range(600)}, set()
    deadline = time.monotonic() + 30
    # (the topic may also hold the records another test wrote to it: count what is wanted)
    while not wanted <= values and time.monotonic() < deadline:
        values |= {m.value() for m in consumer.consume(500, timeout=0.5) if m.error() is None}
    consumer.close()
    assert wanted <= values, f"{len(wanted - values)} of 600 records never read"


def test_replicated_topics_are_created_up_to_the_live_brokers(three_brokers):
    from tests.waiting import wait_until

    with KafkaConnection.to(three_brokers.brokers[0].address) as conn:
        body = conn.request(CREATE_TOPICS, 5, {"topics": [
            {"name": "rf3", "num_partitions": 1, "replication_factor": 3, "assignments": [], "configs": []},
            {"name": "manual-rf2", "num_partitions": -1, "replication_factor": -1,
             "assignments": [{"partition_index": 0, "broker_ids": [2, 0]}], "configs": []},
            {"name": "rf4", "num_partitions": 1, "replication_factor": 4, "assignments": [], "configs": []}],
            "timeout_ms": 30000, "validate_only": False})
        results = {t["name"]: t for t in body["topics"]}
        assert (results["rf3"]["error_code"], results["manual-rf2"]["error_code"]) == (0, 0)
        assert results["rf4"]["error_code"] == 38  # INVALID_REPLICATION_FACTOR
        assert "larger than available brokers: 3" in results["rf4"]["error_message"]

        def partitions() -> dict:
            meta = conn.request(METADATA, 12, {"topics": [{"topic_id": None, "name": n} for n in ("rf3", "manual-rf2")],
                                               "allow_auto_topic_creation": False,
                                               "include_topic_authorized_operations": False})
            return {t["name"]: t["partitions"][0] for t in meta["topics"] if t["error_code"] == 0 and t["partitions"]}

        got = wait_until(lambda: (p := partitions()) and len(p) == 2 and all(
            sorted(x["isr_nodes"]) == sorted(x["replica_nodes"]) for x in p.values()) and p, timeout_s=60,
            message="every replica in the ISR")
        assert sorted(got["rf3"]["replica_nodes"]) == [0, 1, 2]
        assert (got["manual-rf2"]["replica_nodes"], got["manual-rf2"]["leader_id"]) == ([2, 0], 2)
        conn.request(20, 4, {"topic_names": ["rf3", "manual-rf2"], "timeout_ms": 30000})


def test_a_recreated_topic_is_usable_at_its_leader_the_moment_metadata_shows_it(three_brokers):
    """Kafka's order: the leader learns of a partition (LeaderAndIsr) before any broker's
    metadata shows it (UpdateMetadata). Delete and re-create a topic 20 times, asking each
    partition's leader for its log end as soon as any broker's Metadata lists the topic:
    never UNKNOWN_TOPIC_OR_PARTITION, and never a record of an earlier incarnation."""
    import itertools
    import time

    LIST_OFFSETS, DELETE_TOPICS = 2, 20
    brokers = itertools.cycle(sorted(three_brokers.brokers.values(), key=lambda b: b.broker_id))
    addresses = {b.broker_id: b.address for b in three_brokers.brokers.values()}
    topic, partitions = "reborn", 1

    def leaders_seen(conn: KafkaConnection) -> dict[int, int] | None:
        meta = conn.request(METADATA, 12, {"topics": [{"topic_id": None, "name": topic}],
                                           "allow_auto_topic_creation": False,
                                           "include_topic_authorized_operations": False})["topics"][0]
        if meta["error_code"] != 0 or len(meta["partitions"]) != partitions:
            return None
        return {p["partition_index"]: p["leader_id"] for p in meta["partitions"]}

    for round_ in range(20):
        with KafkaConnection.to(next(brokers).address) as admin:
            created = admin.request(CREATE_TOPICS, 5, {"topics": [{
                "name": topic, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                "configs": []}], "timeout_ms": 0, "validate_only": False})   # 0: do not wait for leaders
            assert created["topics"][0]["error_code"] == 0, created
        with KafkaConnection.to(next(brokers).address) as watcher:
            deadline = time.monotonic() + 30
            while (leaders := leaders_seen(watcher)) is None or min(leaders.values()) < 0:
                assert time.monotonic() < deadline, f"round {round_}: the topic never appeared with leaders"
        for partition, leader in leaders.items():
            with KafkaConnection.to(addresses[leader]) as conn:
                answer = conn.request(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
                    {"name": topic, "partitions": [{"partition_index": partition, "current_leader_epoch": -1,
                                                    "timestamp": -1}]}]})["topics"][0]["partitions"][0]
                assert (answer["error_code"], answer["offset"]) == (0, 0), (round_, partition, leader, answer)
                assert produce_to(addresses[leader], topic, partition) == 0
        with KafkaConnection.to(next(brokers).address) as admin:
            deleted = admin.request(DELETE_TOPICS, 4, {"topic_names": [topic], "timeout_ms": 30000})
            assert deleted["responses"][0]["error_code"] == 0, deleted
        for address in addresses.values():
            with KafkaConnection.to(address) as conn:
                deadline = time.monotonic() + 30
                while leaders_seen(conn) is not None:
                    assert time.monotonic() < deadline, f"round {round_}: {address} still lists the deleted topic"
