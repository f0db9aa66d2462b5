"""Topic admin, auto creation, ListOffsets and fetch parking through real clients and raw requests."""
from __future__ import annotations

import threading
import time

import pytest

from rafka.net.client import KafkaConnection
from rafka.partition_worker.record_batch import Record, encode_batch
from tests.interop.clients import create_topic, leader_connection, replication_factors, topic_metadata
from tests.topics import delete_topics
from tests.waiting import wait_until

PRODUCE, FETCH, LIST_OFFSETS, METADATA, CREATE_TOPICS, DELETE_TOPICS = 0, 1, 2, 3, 19, 20


def metadata(conn, topic, auto_create=False):
    return conn.request(METADATA, 12, {"topics": [{"topic_id": None, "name": topic}],
                                       "allow_auto_topic_creation": auto_create,
                                       "include_topic_authorized_operations": False})["topics"][0]


def produce(conn, topic, records, partition=0, timeout_ms=10000):
    body = {"transactional_id": None, "acks": -1, "timeout_ms": timeout_ms, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": encode_batch(records, base_offset=records[0].offset)}]}]}
    return conn.request(PRODUCE, 9, body)["responses"][0]["partition_responses"][0]


@pytest.mark.replicated
def test_confluent_admin_creates_and_deletes_topics(rafka_cluster, bootstrap):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("admin-made", 2)])["admin-made"].result(30)  # the broker's replication factor
    partitions = admin.list_topics(timeout=10).topics["admin-made"].partitions
    assert len(partitions) == 2
    assert {len(p.replicas) for p in partitions.values()} == {rafka_cluster.broker_count}
    admin.delete_topics(["admin-made"])["admin-made"].result(30)
    wait_until(lambda: "admin-made" not in admin.list_topics(timeout=10).topics, timeout_s=20,
               message="topic gone from metadata")
    with KafkaConnection.to(bootstrap) as conn:
        assert metadata(conn, "admin-made")["error_code"] == 3
        gone = conn.request(DELETE_TOPICS, 4, {"topic_names": ["admin-made"], "timeout_ms": 5000})
        assert gone["responses"][0]["error_code"] == 3


def test_admin_clients_describe_the_cluster(rafka_cluster, bootstrap):
    """DescribeCluster (API 60) as confluent-kafka's and kafka-python's describe_cluster send it."""
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaAdminClient

    client = AdminClient({"bootstrap.servers": bootstrap})   # kept: a collected client cancels its requests
    described = client.describe_cluster().result(30)
    assert described.cluster_id == rafka_cluster.cluster_id
    assert [(n.id, n.rack) for n in described.nodes] == [(0, None)] and described.controller.id == 0
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        assert admin.describe_cluster()["brokers"] == [
            {"broker_id": 0, "host": "127.0.0.1", "port": rafka_cluster.brokers[0].port, "rack": None}]
    finally:
        admin.close()


@pytest.mark.replicated
def test_metadata_creates_unknown_topics_when_allowed(rafka_cluster, bootstrap):
    with KafkaConnection.to(bootstrap) as conn:
        first = metadata(conn, "auto-made", auto_create=True)
        assert first["error_code"] in (0, 5)  # LEADER_NOT_AVAILABLE while it is being created
        topic = wait_until(lambda: (t := metadata(conn, "auto-made")) and t["error_code"] == 0 and t,
                           timeout_s=20, message="auto-created topic has leaders")
        assert len(topic["partitions"]) == 1  # num.partitions default
        # default.replication.factor: 3 on the three-broker cluster, as every topic there.
        assert replication_factors(bootstrap, "auto-made") == {rafka_cluster.broker_count}
        assert metadata(conn, "bad name!", auto_create=True)["error_code"] == 17


def test_kafka_python_producer_auto_creates_its_topic(bootstrap):
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap)
    meta = producer.send("auto-by-producer", b"hello").get(timeout=30)
    producer.close()
    assert meta.offset == 0


@pytest.mark.replicated
def test_every_replica_of_a_new_topic_takes_its_first_records_at_once(rafka_cluster, bootstrap):
    """The followers of each new topic fetch from its start: an acks=all produce is acknowledged
    in seconds, with the ISR whole, not after replica.lag.time.max.ms (30 s) has dropped a
    follower that never fetched. A follower left out of its front end's replicas (a
    LeaderAndIsr applied while an UpdateMetadata was under way) failed this about one topic in
    five, so ten topics."""
    for n in range(10):
        topic = f"first-records-{n}"
        create_topic(bootstrap, topic)
        with leader_connection(bootstrap, topic) as conn:
            answer = produce(conn, topic, [Record(0, 1_700_000_000_000, b"k", b"v")], timeout_ms=5000)
        assert answer["error_code"] == 0, (topic, answer)
        isr = topic_metadata(bootstrap, topic)["partitions"][0]["isr_nodes"]
        assert sorted(isr) == list(range(rafka_cluster.broker_count)), (topic, isr)
        delete_topics(bootstrap, {topic})   # (as a client suite does: births and deletions interleave)


@pytest.mark.replicated
def test_list_offsets_earliest_latest_and_by_timestamp(bootstrap):
    create_topic(bootstrap, "by-time")
    with leader_connection(bootstrap, "by-time") as conn:
        for batch in range(5):
            records = [Record(batch * 10 + i, 1_000_000 + (batch * 10 + i) * 100, b"k", b"v") for i in range(10)]
            assert produce(conn, "by-time", records)["base_offset"] == batch * 10

        def lookup(timestamp):
            body = conn.request(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
                {"name": "by-time", "partitions": [{"partition_index": 0, "current_leader_epoch": -1,
                                                    "timestamp": timestamp}]}]})
            p = body["topics"][0]["partitions"][0]
            assert p["error_code"] == 0
            return p["offset"], p["timestamp"]

        assert lookup(-2)[0] == 0
        assert lookup(-1)[0] == 50
        assert lookup(1_000_000 + 23 * 100) == (23, 1_000_000 + 23 * 100)
        assert lookup(1_000_000 + 23 * 100 - 50) == (23, 1_000_000 + 23 * 100)
        assert lookup(9_999_999_999)[0] == -1
        assert lookup(-3) == (49, 1_000_000 + 49 * 100)  # max timestamp


def test_fetch_parks_until_data_arrives_or_max_wait(bootstrap):
    with KafkaConnection.to(bootstrap) as conn:
        conn.request(CREATE_TOPICS, 5, {"topics": [{"name": "parked", "num_partitions": 1,
                                                    "replication_factor": 1, "assignments": [], "configs": []}],
                                        "timeout_ms": 30000, "validate_only": False})
    body = {"replica_id": -1, "max_wait_ms": 3000, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": "parked", "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                           "fetch_offset": 0, "last_fetched_epoch": -1,
                                                           "log_start_offset": -1,
                                                           "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}
    with KafkaConnection.to(bootstrap) as conn:
        started = time.monotonic()
        empty = conn.request(FETCH, 12, {**body, "max_wait_ms": 300})
        waited = time.monotonic() - started
        assert not empty["responses"][0]["partitions"][0]["records"]
        assert waited >= 0.25  # it parked for max_wait_ms instead of answering at once

        def produce_later():
            with KafkaConnection.to(bootstrap) as other:
                time.sleep(0.3)  # the fetch below must already be parked
                produce(other, "parked", [Record(0, 1_700_000_000_000, b"k", b"late")])

        thread = threading.Thread(target=produce_later)
        thread.start()
        started = time.monotonic()
        answer = conn.request(FETCH, 12, body)
        elapsed = time.monotonic() - started
        thread.join()
        partition = answer["responses"][0]["partitions"][0]
        assert partition["records"] and partition["high_watermark"] == 1
        assert elapsed < 2.5  # woken by the append, not by the 3 s max wait
