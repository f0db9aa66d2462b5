"""Large messages: a batch as large as message.max.bytes (Kafka's default, 1 MiB + 12: the
batch with its 12-byte log overhead) is taken with acks=all, stored, and read back by real
consumers whose max.partition.fetch.bytes (1 MiB) is smaller, since the first batch of a fetch
is returned whatever its size (KIP-74); one byte more is refused with MESSAGE_TOO_LARGE. On
three brokers the followers fetch it too, although replica.fetch.max.bytes (1 MiB) is smaller,
and every replica's log ends byte-identical."""
from __future__ import annotations

import time

import pytest

from rafka.partition_worker.record_batch import Record, encode_batch
from tests.interop import clients
from tests.interop.test_raw_protocol import produce_body
from tests.waiting import wait_until

PRODUCE = 0
MESSAGE_MAX_BYTES = 1_048_588     # message.max.bytes, Kafka's default
MESSAGE_TOO_LARGE = 10
CLIENT_VALUE_BYTES = 900_000      # under librdkafka's own message.max.bytes (1,000,000)
TS = 1_700_000_000_000


def batch_of_size(size: int, key: bytes) -> tuple[bytes, int]:
    """One uncompressed batch of one record whose encoding is exactly `size` bytes, and the
    length of that record's value."""
    value_bytes = size - len(encode_batch([Record(0, TS, key, b"")]))
    for _ in range(5):   # a varint of the value's length may grow by a byte: adjust
        batch = encode_batch([Record(0, TS, key, b"x" * value_bytes)])
        if len(batch) == size:
            return batch, value_bytes
        value_bytes += size - len(batch)
    raise AssertionError(f"no batch of exactly {size} bytes")


def confluent_read_all(bootstrap: str, topic: str, count: int) -> list[tuple[int, bytes, int]]:
    """(offset, key, value length) of the first `count` records, read by confluent-kafka."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "large", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    out: list[tuple[int, bytes, int]] = []
    deadline = time.monotonic() + 60
    while len(out) < count and time.monotonic() < deadline:
        for m in consumer.consume(10, timeout=0.5):
            assert m.error() is None, m.error()
            out.append((m.offset(), m.key(), len(m.value())))
    consumer.close()
    return out


def kafka_python_read_all(bootstrap: str, topic: str, count: int) -> list[tuple[int, bytes, int]]:
    """The same, read by kafka-python."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    out: list[tuple[int, bytes, int]] = []
    deadline = time.monotonic() + 60
    while len(out) < count and time.monotonic() < deadline:
        for msgs in consumer.poll(timeout_ms=500).values():
            out += [(m.offset, m.key, len(m.value)) for m in msgs]
    consumer.close()
    return out


@pytest.mark.replicated
def test_a_batch_of_message_max_bytes_is_taken_replicated_and_read_back(rafka_cluster):
    from confluent_kafka import Producer

    bootstrap, topic = rafka_cluster.bootstrap_servers, "large-messages"
    clients.create_topic(bootstrap, topic)
    largest_batch, raw_value_bytes = batch_of_size(MESSAGE_MAX_BYTES, b"raw")
    with clients.leader_connection(bootstrap, topic) as conn:
        largest = conn.request(PRODUCE, 9, produce_body(topic, largest_batch, acks=-1))
        too_large = conn.request(PRODUCE, 9, produce_body(topic, batch_of_size(MESSAGE_MAX_BYTES + 1, b"raw")[0],
                                                          acks=-1))
    assert largest["responses"][0]["partition_responses"][0]["error_code"] == 0, largest
    assert too_large["responses"][0]["partition_responses"][0]["error_code"] == MESSAGE_TOO_LARGE, too_large

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    errors: list = []
    for i in range(3):
        producer.produce(topic, b"v" * CLIENT_VALUE_BYTES, key=b"client-%d" % i,
                         on_delivery=lambda err, _m: err and errors.append(err))
    assert producer.flush(60) == 0 and not errors, errors

    expected = [(0, b"raw", raw_value_bytes)] + [(1 + i, b"client-%d" % i, CLIENT_VALUE_BYTES) for i in range(3)]
    assert confluent_read_all(bootstrap, topic, 4) == expected
    assert kafka_python_read_all(bootstrap, topic, 4) == expected

    # Every broker holds a replica (RF=3 on three brokers), and each ends with the same bytes.
    brokers = rafka_cluster.broker_count
    assert clients.replication_factors(bootstrap, topic) == {brokers}

    def replica_logs() -> list[bytes]:
        return [b"".join(f.read_bytes() for f in sorted(d.glob("*.log")))
                for d in clients.replica_dirs(rafka_cluster.data_dir, topic, 0)]

    wait_until(lambda: len(logs := replica_logs()) == brokers and len(set(logs)) == 1, timeout_s=30,
               message="every replica's log byte-identical")
    assert len(replica_logs()[0]) > 3 * CLIENT_VALUE_BYTES + MESSAGE_MAX_BYTES
