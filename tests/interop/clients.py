"""Produce and consume with the real Kafka clients, the way their users do by default.

Every function returns what the client saw, so tests compare it with what was sent.
Group consumption is its own issue; until then consumers assign partitions by hand.
"""
from __future__ import annotations

import asyncio
import subprocess
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Sent:
    key: bytes
    value: bytes
    headers: tuple[tuple[str, bytes], ...]
    timestamp_ms: int


@dataclass(frozen=True)
class Received:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp_ms: int


def make_records(count: int, base_ts: int | None = None) -> list[Sent]:
    base = base_ts if base_ts is not None else int(time.time() * 1000) - count
    return [Sent(key=b"key-%06d" % i, value=(b"value-%06d-" % i) * 5,
                 headers=(("h1", b"v%d" % i), ("trace", b"t-%d" % (i % 7))), timestamp_ms=base + i)
            for i in range(count)]


# -- kafka-python ---------------------------------------------------------------------
def kafka_python_produce(bootstrap: str, topic: str, records: list[Sent], compression: str | None) -> None:
    from kafka import KafkaProducer

    # kafka-python's defaults: idempotent, acks=all.
    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type=compression, linger_ms=5)
    futures = [producer.send(topic, key=r.key, value=r.value, headers=list(r.headers), partition=0,
                             timestamp_ms=r.timestamp_ms) for r in records]
    producer.flush(60)
    for f in futures:
        f.get(timeout=60)
    producer.close()


def kafka_python_consume(bootstrap: str, topic: str, count: int, timeout_s: float = 60) -> list[Received]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    out: list[Received] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < count and time.monotonic() < deadline:
        for msgs in consumer.poll(timeout_ms=500).values():
            out += [Received(m.partition, m.offset, m.key, m.value, tuple(m.headers), m.timestamp) for m in msgs]
    consumer.close()
    return out


# -- confluent-kafka -------------------------------------------------------------------
def confluent_produce(bootstrap: str, topic: str, records: list[Sent], compression: str | None) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": compression or "none",
                         "linger.ms": 5, "acks": 1, "enable.idempotence": False})
    errors: list = []
    for r in records:
        producer.produce(topic, key=r.key, value=r.value, headers=list(r.headers), partition=0,
                         timestamp=r.timestamp_ms, on_delivery=lambda err, msg: err and errors.append(err))
        producer.poll(0)
    assert producer.flush(60) == 0
    assert not errors, errors[:3]


def confluent_consume(bootstrap: str, topic: str, count: int, timeout_s: float = 60) -> list[Received]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "interop", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    out: list[Received] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < count and time.monotonic() < deadline:
        for m in consumer.consume(1000, timeout=0.5):
            assert m.error() is None, m.error()
            out.append(Received(m.partition(), m.offset(), m.key(), m.value(), tuple(m.headers() or ()),
                                m.timestamp()[1]))
    consumer.close()
    return out


# -- aiokafka ----------------------------------------------------------------------------
def aiokafka_produce(bootstrap: str, topic: str, records: list[Sent], compression: str | None) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type=compression, acks=1,
                                    linger_ms=5, enable_idempotence=False)
        await producer.start()
        try:
            futures = [await producer.send(topic, key=r.key, value=r.value, headers=list(r.headers), partition=0,
                                           timestamp_ms=r.timestamp_ms) for r in records]
            await asyncio.gather(*futures)
        finally:
            await producer.stop()

    asyncio.run(run())


def aiokafka_consume(bootstrap: str, topic: str, count: int, timeout_s: float = 60) -> list[Received]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> list[Received]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                    auto_offset_reset="earliest")
        await consumer.start()
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        out: list[Received] = []
        deadline = time.monotonic() + timeout_s
        try:
            while len(out) < count and time.monotonic() < deadline:
                batch = await consumer.getmany(tp, timeout_ms=500)
                for m in batch.get(tp, []):
                    out.append(Received(m.partition, m.offset, m.key, m.value, tuple(m.headers), m.timestamp))
        finally:
            await consumer.stop()
        return out

    return asyncio.run(run())


# -- kcat --------------------------------------------------------------------------------
KCAT_FIELDS = "%p\t%o\t%k\t%s\t%h\t%T\n"


def kcat_produce(bootstrap: str, topic: str, records: list[Sent], compression: str | None) -> None:
    """kcat -P takes one header set for all records, so records here share one header set."""
    headers = records[0].headers
    args = ["kcat", "-P", "-b", bootstrap, "-t", topic, "-p", "0", "-K", "\t",
            "-X", f"compression.codec={compression or 'none'}", "-X", "enable.idempotence=false"]
    for name, value in headers:
        args += ["-H", f"{name}={value.decode()}"]
    payload = b"".join(r.key + b"\t" + r.value + b"\n" for r in records)
    subprocess.run(args, input=payload, check=True, timeout=120, capture_output=True)


def kcat_consume(bootstrap: str, topic: str, count: int, timeout_s: float = 60) -> list[Received]:
    args = ["kcat", "-C", "-b", bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-c", str(count),
            "-f", KCAT_FIELDS]
    out = subprocess.run(args, check=True, timeout=timeout_s, capture_output=True).stdout
    received = []
    for line in out.splitlines():
        p, o, k, v, h, ts = line.split(b"\t")
        headers = tuple((name.decode(), value) for name, _, value in
                        (pair.partition(b"=") for pair in h.split(b",") if pair))
        received.append(Received(int(p), int(o), k, v, headers, int(ts)))
    return received
