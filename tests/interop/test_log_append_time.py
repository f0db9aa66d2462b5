"""Broker timestamps with real clients: a `message.timestamp.type=LogAppendTime` topic gives
consumers the broker's append time (not the producer's), and a topic with
`message.timestamp.before.max.ms` refuses a record that is too old with INVALID_TIMESTAMP."""
from __future__ import annotations

import time
import uuid

from rafka.net.client import KafkaConnection

OLD = 1_000_000  # 1970: far from the broker's clock


def create_topic_with(bootstrap: str, topic: str, configs: dict[str, str]) -> None:
    with KafkaConnection.to(bootstrap) as conn:
        body = conn.request(19, 5, {"topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1,
                                                "assignments": [],
                                                "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
                                    "timeout_ms": 30000, "validate_only": False})
    assert body["topics"][0]["error_code"] == 0, body


def test_log_append_time_topic_gives_broker_timestamps(bootstrap):
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, Producer
    from kafka import KafkaConsumer

    topic = f"append-time-{uuid.uuid4().hex[:6]}"
    create_topic_with(bootstrap, topic, {"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    delivered = []
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": "lz4"})
    for i in range(20):
        producer.produce(topic, b"v%d" % i, key=b"k", timestamp=OLD + i,
                         on_delivery=lambda err, msg: delivered.append((err, msg.timestamp())))
    assert producer.flush(30) == 0
    after = int(time.time() * 1000)
    assert all(err is None for err, _ in delivered)
    # The produce response's log_append_time reaches the producer too.
    assert all(kind == TIMESTAMP_LOG_APPEND_TIME and before <= ts <= after for _, (kind, ts) in delivered)

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen = []
    deadline = time.monotonic() + 30
    while len(seen) < 20 and time.monotonic() < deadline:
        seen += [m for m in consumer.consume(100, timeout=0.5) if m.error() is None]
    consumer.close()
    assert len(seen) == 20
    assert all(m.timestamp()[0] == TIMESTAMP_LOG_APPEND_TIME and before <= m.timestamp()[1] <= after for m in seen)

    kp = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=10000)
    records = [r for _, r in zip(range(20), kp)]
    kp.close()
    assert len(records) == 20
    assert all(r.timestamp_type == 1 and before <= r.timestamp <= after for r in records)


def test_too_old_create_time_is_refused_with_invalid_timestamp(bootstrap):
    from confluent_kafka import KafkaError, Producer

    topic = f"bounded-time-{uuid.uuid4().hex[:6]}"
    create_topic_with(bootstrap, topic, {"message.timestamp.before.max.ms": "3600000"})
    errors = []
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": False, "retries": 0})
    producer.produce(topic, b"old", timestamp=OLD, on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(30) == 0  # its own batch: Kafka refuses the whole batch of a bad record
    producer.produce(topic, b"now", on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(30) == 0
    codes = sorted((e.code() if e is not None else 0) for e in errors)
    assert codes == sorted([KafkaError.INVALID_TIMESTAMP, 0]), errors


def test_produce_v8_names_each_refused_record(bootstrap):
    """Produce v8+ answers INVALID_TIMESTAMP with one record error per refused record (its
    index in the batch), as Kafka's LogValidator; older versions get the error code alone."""
    from rafka.partition_worker.record_batch import Record, encode_batch

    topic = f"record-errors-{uuid.uuid4().hex[:6]}"
    create_topic_with(bootstrap, topic, {"message.timestamp.before.max.ms": "3600000"})
    now = int(time.time() * 1000)
    batch = encode_batch([Record(0, now, None, b"a"), Record(1, OLD, None, b"b"), Record(2, now, None, b"c"),
                          Record(3, OLD + 1, None, b"d")])
    with KafkaConnection.to(bootstrap) as conn:
        for version in (9, 7):
            body = conn.request(0, version, {"transactional_id": None, "acks": 1, "timeout_ms": 30000,
                                             "topic_data": [{"name": topic, "partition_data": [
                                                 {"index": 0, "records": batch}]}]})
            [partition] = body["responses"][0]["partition_responses"]
            assert partition["error_code"] == 32 and partition["base_offset"] == -1, partition  # INVALID_TIMESTAMP
            if version >= 8:
                assert [e["batch_index"] for e in partition["record_errors"]] == [1, 3]
                assert f"Timestamp {OLD} of message with offset 1 is out of range" in \
                    partition["record_errors"][0]["batch_index_error_message"]
                assert partition["error_message"] == "One or more records have been rejected due to invalid timestamp"
        latest = conn.request(2, 5, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
    assert latest["topics"][0]["partitions"][0]["offset"] == 0  # nothing of the batch was written
