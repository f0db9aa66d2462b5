"""What the real Kafka clients produce and see, to compare the Spark bridge with.

Records are plain tuples in the order of `Record`'s fields, so a Spark row and a
kafka-python record compare column for column.
"""
from __future__ import annotations

import time
from typing import Iterable, NamedTuple

from tests.waiting import wait_until


class Record(NamedTuple):
    """Every column of Spark's Kafka source, `timestamp` in ms since the epoch."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    timestamp_type: int
    headers: tuple[tuple[str, bytes], ...]


# A Spark projection of the source's columns into `Record` order, timestamps in ms.
SPARK_COLUMNS = ["topic", "partition", "offset", "key", "value", "unix_millis(timestamp) AS timestamp_ms",
                 "timestampType", "headers"]


def spark_records(df) -> list[Record]:  # noqa: ANN001 - a pyspark DataFrame
    """A DataFrame of the source's schema (with headers) as sorted `Record`s."""
    rows = df.selectExpr(*SPARK_COLUMNS).collect()
    return sorted(Record(r.topic, r.partition, r.offset, r.key, r.value, r.timestamp_ms, r.timestampType,
                         tuple((h.key, h.value) for h in (r.headers or ()))) for r in rows)


def create_topic(bootstrap: str, name: str, partitions: int, configs: dict[str, str] | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1, config=configs or {})])[name].result(30)
    # Metadata reaches the front end a little after CreateTopics answers.
    wait_until(lambda: len(admin.list_topics(name, timeout=10).topics[name].partitions) == partitions,
               timeout_s=30, message=f"topic {name} in metadata")


def produce(bootstrap: str, topic: str, count: int, *, start: int = 0, timestamp_ms: int | None = None,
            partition: int | None = None) -> list[Record]:
    """`count` records from kafka-python with its defaults (idempotent, acks=all, murmur2 keys):
    keys `key-<i>` (every seventh null), values, two headers (every fifth none), CreateTime
    timestamps one ms apart. Returns them as the topic now holds them (offsets from the acks;
    timestamp type and value from a kafka-python consumer when the topic stamps LogAppendTime)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    base = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000) - count
    sent = []
    for i in range(start, start + count):
        key = None if i % 7 == 3 else b"key-%d" % i
        headers = [] if i % 5 == 0 else [("h1", b"v%d" % i), ("trace", b"" if i % 3 == 0 else b"t%d" % (i % 4))]
        future = producer.send(topic, key=key, value=b"value-%d-" % i * 3, headers=headers, partition=partition,
                               timestamp_ms=base + i - start)
        sent.append((key, b"value-%d-" % i * 3, tuple(headers), base + i - start, future))
    producer.flush(60)
    out = []
    for key, value, headers, ts, future in sent:
        meta = future.get(timeout=60)
        out.append(Record(topic, meta.partition, meta.offset, key, value, ts, 0, headers))
    producer.close()
    return out


def consume(bootstrap: str, topic: str, count: int, timeout_s: float = 60) -> list[Record]:
    """All `count` records of `topic`, every partition from its start, read with kafka-python."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
    consumer.assign(parts)
    consumer.seek_to_beginning(*parts)
    out: list[Record] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < count and time.monotonic() < deadline:
        for messages in consumer.poll(timeout_ms=500).values():
            out += [Record(m.topic, m.partition, m.offset, m.key, m.value, m.timestamp, m.timestamp_type,
                           tuple(m.headers)) for m in messages]
    consumer.close()
    return sorted(out)
