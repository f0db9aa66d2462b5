"""DeleteRecords (API 21) with kafka-python's and confluent-kafka's admin clients: the low
watermark they get back, consumers from earliest starting there, ListOffsets earliest
answering it, and the refusals (past the high watermark, unknown partition)."""
from __future__ import annotations

import pytest

from rafka.net.client import KafkaConnection
from tests.interop.clients import kafka_python_consume, make_records
from tests.waiting import wait_until

API_VERSIONS, LIST_OFFSETS, DELETE_RECORDS = 18, 2, 21
COUNT = 100
CHUNK = 10  # records per produce request: one batch each, about 1.2 KB
# Small segments, so deleting records also deletes whole segment files; no delay before the
# files go, so a fetch after it reads only what is left.
TOPIC_CONFIGS = {"segment.bytes": "4096", "file.delete.delay.ms": "0"}


def create(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=TOPIC_CONFIGS)])[topic].result(30)


def produce_in_batches(bootstrap: str, topic: str, client: str) -> None:
    """COUNT records to partition 0, a batch of CHUNK at a time, so the log has several segments."""
    records = make_records(COUNT)
    if client == "kafka-python":
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=bootstrap)
        for start in range(0, COUNT, CHUNK):
            futures = [producer.send(topic, key=r.key, value=r.value, partition=0, timestamp_ms=r.timestamp_ms)
                       for r in records[start:start + CHUNK]]
            producer.flush(30)
            assert [f.get(timeout=30).offset for f in futures] == list(range(start, start + CHUNK))
        producer.close()
    else:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": bootstrap})
        for start in range(0, COUNT, CHUNK):
            for r in records[start:start + CHUNK]:
                producer.produce(topic, key=r.key, value=r.value, partition=0, timestamp=r.timestamp_ms)
            assert producer.flush(30) == 0


def earliest_offset(bootstrap: str, topic: str) -> int:
    """ListOffsets v7, timestamp -2 (earliest), as a raw request."""
    with KafkaConnection.to(bootstrap) as conn:
        body = conn.request(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -2}]}]})
    partition = body["topics"][0]["partitions"][0]
    assert partition["error_code"] == 0
    return partition["offset"]


def confluent_first_offset(bootstrap: str, topic: str) -> int:
    """The first offset a confluent-kafka consumer with auto.offset.reset=earliest receives."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "delete-records", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        for _ in range(120):
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                return message.offset()
        raise AssertionError("no record consumed")
    finally:
        consumer.close()


def test_kafka_python_delete_records(bootstrap):
    from kafka import KafkaConsumer, TopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.errors import OffsetOutOfRangeError

    topic = "delete-records-kp"
    create(bootstrap, topic)
    produce_in_batches(bootstrap, topic, "kafka-python")
    tp = TopicPartition(topic, 0)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        result = admin.delete_records({tp: 40}, timeout_ms=10000)
        assert result[tp]["low_watermark"] == 40 and result[tp]["error_code"] == 0
        assert admin.delete_records({tp: 10})[tp]["low_watermark"] == 40  # never moves back
        with pytest.raises(OffsetOutOfRangeError):
            admin.delete_records({tp: COUNT + 1})
    finally:
        admin.close()
    assert earliest_offset(bootstrap, topic) == 40
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    try:
        assert consumer.beginning_offsets([tp]) == {tp: 40}
    finally:
        consumer.close()
    # The helper seeks to 0: the broker answers OFFSET_OUT_OF_RANGE and the consumer resets to earliest.
    received = kafka_python_consume(bootstrap, topic, COUNT - 40)
    assert [r.offset for r in received] == list(range(40, COUNT))


def test_confluent_delete_records(bootstrap, rafka_cluster):
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    topic = "delete-records-ck"
    create(bootstrap, topic)
    produce_in_batches(bootstrap, topic, "confluent")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deleted = admin.delete_records([TopicPartition(topic, 0, 70)], operation_timeout=10)
    assert next(iter(deleted.values())).result(30).low_watermark == 70
    assert earliest_offset(bootstrap, topic) == 70
    listed = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.earliest()})
    assert next(iter(listed.values())).result(30).offset == 70
    assert confluent_first_offset(bootstrap, topic) == 70

    too_far = admin.delete_records([TopicPartition(topic, 0, COUNT + 5)])
    with pytest.raises(KafkaException) as refused:
        next(iter(too_far.values())).result(30)
    assert refused.value.args[0].name() == "OFFSET_OUT_OF_RANGE"

    partition_dir = rafka_cluster.data_dir / "broker-0" / "logs" / f"{topic}-0"
    assert len(list(partition_dir.glob("*.log"))) > 1
    everything = admin.delete_records([TopicPartition(topic, 0, -1)])  # OFFSET_END: up to the high watermark
    assert next(iter(everything.values())).result(30).low_watermark == COUNT
    assert earliest_offset(bootstrap, topic) == COUNT
    # Every segment but the active one went, and file.delete.delay.ms=0 removes their files at once.
    wait_until(lambda: len(list(partition_dir.glob("*.log"))) == 1 and not list(partition_dir.glob("*.deleted")),
               timeout_s=30, message="deleted segment files removed")


def test_raw_delete_records_versions_and_unknown_partitions(bootstrap):
    topic = "delete-records-raw"
    create(bootstrap, topic)
    produce_in_batches(bootstrap, topic, "confluent")
    with KafkaConnection.to(bootstrap) as conn:
        versions = {k["api_key"]: (k["min_version"], k["max_version"])
                    for k in conn.request(API_VERSIONS, 3, {"client_software_name": "t",
                                                            "client_software_version": "1"})["api_keys"]}
        assert versions[DELETE_RECORDS] == (0, 2)
        for version, offset in ((0, 2), (1, 4), (2, 6)):
            body = conn.request(DELETE_RECORDS, version, {"timeout_ms": 5000, "topics": [
                {"name": topic, "partitions": [{"partition_index": 0, "offset": offset},
                                               {"partition_index": 7, "offset": 0}]},
                {"name": "no-such-topic", "partitions": [{"partition_index": 0, "offset": 0}]}]})
            known, missing = body["topics"][0]["partitions"]
            assert (known["error_code"], known["low_watermark"]) == (0, offset)
            assert (missing["error_code"], missing["low_watermark"]) == (3, -1)
            assert body["topics"][1]["partitions"][0]["error_code"] == 3
        zero = conn.request(DELETE_RECORDS, 2, {"timeout_ms": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "offset": 8}]}]})
        assert zero["topics"][0]["partitions"][0]["low_watermark"] == 8
    assert earliest_offset(bootstrap, topic) == 8
