"""Clients cannot write to internal topics: a produce to `__consumer_offsets` is refused per
partition with INVALID_TOPIC_EXCEPTION and Kafka's message, by a raw request and through
confluent-kafka, and the topic's log does not grow."""
from __future__ import annotations

import pytest

from rafka.net.client import KafkaConnection
from rafka.partition_worker.record_batch import Record, encode_batch
from tests.waiting import wait_until

PRODUCE, LIST_OFFSETS, METADATA, FIND_COORDINATOR = 0, 2, 3, 10
INVALID_TOPIC_EXCEPTION = 17
OFFSETS_TOPIC = "__consumer_offsets"


@pytest.fixture(scope="module")
def offsets_topic(bootstrap) -> int:
    """`__consumer_offsets` exists (FindCoordinator creates it); returns its partition count."""
    with KafkaConnection.to(bootstrap) as conn:
        wait_until(lambda: conn.request(FIND_COORDINATOR, 3, {"key": "internal-topics", "key_type": 0})[
            "error_code"] == 0, timeout_s=60, message="a group coordinator")
        topic = conn.request(METADATA, 12, {"topics": [{"topic_id": None, "name": OFFSETS_TOPIC}],
                                            "allow_auto_topic_creation": False,
                                            "include_topic_authorized_operations": False})["topics"][0]
    assert topic["error_code"] == 0 and topic["is_internal"]
    return len(topic["partitions"])


def log_ends(conn: KafkaConnection, partitions: int) -> list[int]:
    body = conn.request(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": OFFSETS_TOPIC, "partitions": [{"partition_index": p, "current_leader_epoch": -1, "timestamp": -1}
                                               for p in range(partitions)]}]})
    return [p["offset"] for p in body["topics"][0]["partitions"]]


def test_raw_produce_to_consumer_offsets_is_refused_with_kafkas_message(bootstrap, offsets_topic):
    junk = encode_batch([Record(0, 1_700_000_000_000, None, b"junk")])
    with KafkaConnection.to(bootstrap) as conn:
        before = log_ends(conn, offsets_topic)
        body = conn.request(PRODUCE, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": OFFSETS_TOPIC, "partition_data": [{"index": p, "records": junk} for p in range(offsets_topic)]}]})
        answers = body["responses"][0]["partition_responses"]
        assert [(a["error_code"], a["error_message"]) for a in answers] == [
            (INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {OFFSETS_TOPIC}")] * offsets_topic
        assert log_ends(conn, offsets_topic) == before


def test_confluent_producer_gets_topic_exception_for_consumer_offsets(bootstrap, offsets_topic):
    """(kafka-python hides internal topics from its own partitioner: it never sends.)"""
    from confluent_kafka import KafkaError, Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": False, "retries": 0})
    errors: list = []
    producer.produce(OFFSETS_TOPIC, key=b"junk", value=b"junk", partition=0,
                     on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(30) == 0
    assert [e.code() for e in errors] == [KafkaError.TOPIC_EXCEPTION]
