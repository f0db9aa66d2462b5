"""Idempotent producers of three real clients: 100,000 keyed records over 6 partitions each,
read back exactly once and in order per partition, every stored batch carrying a producer id
and gap-free sequences (KIP-98)."""
from __future__ import annotations

import asyncio
from collections import defaultdict
from pathlib import Path

import pytest

from rafka.partition_worker.record_batch import iter_batches
from tests.interop.clients import create_topic
from tests.waiting import wait_until

RECORDS = 100_000
PARTITIONS = 6


def payload(i: int) -> tuple[bytes, bytes]:
    return b"key-%06d" % i, b"value-%06d" % i


def kafka_python_produce(bootstrap: str, topic: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap)  # defaults: idempotent, acks=all
    assert producer.config["enable_idempotence"] and producer.config["acks"] == -1
    futures = [producer.send(topic, key=k, value=v) for k, v in map(payload, range(RECORDS))]
    producer.flush(120)
    for f in futures:
        f.get(timeout=60)
    producer.close()


def confluent_produce(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    errors: list = []
    for k, v in map(payload, range(RECORDS)):
        while True:
            try:
                producer.produce(topic, key=k, value=v, on_delivery=lambda err, msg: err and errors.append(err))
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(120) == 0
    assert not errors, errors[:3]


def aiokafka_produce(bootstrap: str, topic: str) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True)
        await producer.start()
        try:
            futures = [await producer.send(topic, key=k, value=v) for k, v in map(payload, range(RECORDS))]
            await asyncio.gather(*futures)
        finally:
            await producer.stop()

    asyncio.run(run())


def consume_all(bootstrap: str, topic: str, expected: int, timeout_s: float = 120) -> dict[int, list[int]]:
    """Record numbers per partition, in offset order, read until `expected` arrived and the
    partitions' ends were reached (so an extra copy would be seen)."""
    import time

    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "idempotent-check",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    seen: dict[int, list[int]] = defaultdict(list)
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and (sum(map(len, seen.values())) < expected or len(at_end) < PARTITIONS):
        for m in consumer.consume(5000, timeout=0.5):
            if m.error() is not None:
                assert m.error().code() == m.error()._PARTITION_EOF, m.error()
                at_end.add(m.partition())
                continue
            at_end.discard(m.partition())
            seen[m.partition()].append(int(m.value().split(b"-")[1]))
    consumer.close()
    return seen


def stored_batches(cluster, topic: str) -> dict[str, list]:
    """Headers of every stored batch, in log order, by replica ("broker-1/topic-0")."""
    found: dict[str, list] = defaultdict(list)
    for part_dir in Path(cluster.data_dir).glob(f"broker-*/logs/{topic}-*"):
        for segment in sorted(part_dir.glob("*.log")):
            replica = f"{part_dir.parent.parent.name}/{part_dir.name}"
            found[replica] += list(iter_batches(memoryview(segment.read_bytes())))
    return found


# On three brokers one client: librdkafka's idempotent producer, acks=all to RF=3 partitions.
@pytest.mark.parametrize("produce", [kafka_python_produce,
                                     pytest.param(confluent_produce, marks=pytest.mark.replicated),
                                     aiokafka_produce],
                         ids=["kafka-python", "confluent-kafka", "aiokafka"])
def test_idempotent_client_writes_each_record_exactly_once(rafka_cluster, produce):
    topic = f"idempotent-{produce.__name__}"
    bootstrap = rafka_cluster.bootstrap_servers
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    produce(bootstrap, topic)

    seen = consume_all(bootstrap, topic, RECORDS)
    numbers = [n for values in seen.values() for n in values]
    assert len(numbers) == RECORDS and set(numbers) == set(range(RECORDS))
    assert len(seen) == PARTITIONS
    for partition, values in seen.items():
        assert values == sorted(values), f"partition {partition} out of order"

    # Every replica of every partition (followers included) holds each batch once, in order.
    def caught_up() -> dict[str, list]:
        """The stored batches once every replica of a partition holds as many as the others."""
        found = stored_batches(rafka_cluster, topic)
        counts: dict[str, set[int]] = defaultdict(set)
        for name, headers in found.items():
            counts[name.split("/")[1]].add(len(headers))
        return found if all(len(c) == 1 for c in counts.values()) else {}

    stored = wait_until(caught_up, timeout_s=30, message="every replica holds every batch")
    assert len(stored) == PARTITIONS * rafka_cluster.broker_count
    for name, headers in stored.items():
        assert all(h.producer_id >= 0 and h.producer_epoch >= 0 for h in headers), name
        next_sequence: dict[int, int] = {}  # one producer's sequences continue without gaps
        for h in headers:
            assert h.base_sequence == next_sequence.get(h.producer_id, 0), name
            next_sequence[h.producer_id] = h.base_sequence + h.last_offset_delta + 1
