"""Produce and consume with the real Kafka clients, the way their users do by default.

Every function returns what the client saw, so tests compare it with what was sent.
Group consumption is its own issue; until then consumers assign partitions by hand.
The helpers take a bootstrap list of one broker or several (the session's cluster has one or
three), and raw requests go to the broker that leads the partition (`leader_connection`).
"""
from __future__ import annotations

import asyncio
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rafka.net.client import KafkaConnection
from tests.waiting import wait_until

CREATE_TOPICS, METADATA = 19, 3


def create_topic(bootstrap: str, topic: str, partitions: int = 1, replication_factor: int = -1) -> None:
    """CreateTopics through the first broker; replication factor -1 takes the cluster's
    default.replication.factor (KIP-464), so a topic is RF=3 on the three-broker cluster."""
    with KafkaConnection.to(bootstrap) as conn:
        body = conn.request(CREATE_TOPICS, 5, {"topics": [{"name": topic, "num_partitions": partitions,
                                                           "replication_factor": replication_factor,
                                                           "assignments": [], "configs": []}],
                                               "timeout_ms": 30000, "validate_only": False})
    assert body["topics"][0]["error_code"] == 0, body


def metadata(address: str, topic: str) -> dict:
    """A Metadata v12 answer about `topic` from the first broker of `address` (no auto-creation)."""
    with KafkaConnection.to(address) as conn:
        return conn.request(METADATA, 12, {"topics": [{"topic_id": None, "name": topic}],
                                           "allow_auto_topic_creation": False,
                                           "include_topic_authorized_operations": False})


def topic_metadata(bootstrap: str, topic: str) -> dict:
    """The topic's entry of a Metadata answer from the first broker."""
    return metadata(bootstrap, topic)["topics"][0]


def replication_factors(bootstrap: str, topic: str) -> set[int]:
    """The number of replicas of each partition of `topic`, as Metadata shows them."""
    return {len(p["replica_nodes"]) for p in topic_metadata(bootstrap, topic)["partitions"]}


def leader_connection(bootstrap: str, topic: str, partition: int = 0, **kwargs: Any) -> KafkaConnection:
    """A raw connection to the broker that leads `topic`-`partition` (as a Kafka client routes a
    Produce or a Fetch), once that broker's own metadata names it the leader (its replica has
    started): on one broker, that broker."""
    def leader_of(address: str) -> tuple[int, str | None]:
        body = metadata(address, topic)
        brokers = {b["node_id"]: f"{b['host']}:{b['port']}" for b in body["brokers"]}
        leaders = [p["leader_id"] for p in body["topics"][0]["partitions"] if p["partition_index"] == partition]
        return (leaders[0], brokers.get(leaders[0])) if leaders else (-1, None)

    def ready_leader() -> str | None:
        leader, address = leader_of(bootstrap)
        return address if address is not None and leader_of(address)[0] == leader else None

    return KafkaConnection.to(wait_until(ready_leader, timeout_s=30, message=f"a leader of {topic}-{partition}"),
                              **kwargs)


def replica_dirs(data_dir: str | Path, topic: str, partition: int) -> list[Path]:
    """The directory of every replica of `topic`-`partition` in a cluster's data dir (one per broker)."""
    return sorted(Path(data_dir).glob(f"broker-*/logs/{topic}-{partition}"))


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
