"""Writing rows to Kafka from Arrow batches: what a Spark write task and a Ray ingestion task
do. librdkafka with acks=all and the idempotent producer (unless `kafka.` options say
otherwise); keyed rows go to the partition murmur2 picks, as every Kafka client's default
partitioner does; the first delivery error fails the writer with Kafka's error, so a
task never reports success for rows Kafka refused.
"""
from __future__ import annotations

import itertools
import logging
from typing import Callable, Mapping

import pyarrow as pa
from confluent_kafka import KafkaException, Producer

from rafka.spark_bridge.murmur2 import partition_for_key
from rafka.spark_bridge.sink_columns import SinkColumns, sink_columns

log = logging.getLogger(__name__)

_UNASSIGNED = -1  # librdkafka's RD_KAFKA_PARTITION_UA: let its partitioner choose
_POLL_EVERY = 1000
FLUSH_TIMEOUT_S = 120.0


class KafkaWriteError(RuntimeError):
    """Kafka refused records (or never acknowledged them); the message carries Kafka's error."""


def producer_settings(bootstrap_servers: str, client: Mapping[str, object]) -> dict[str, object]:
    """acks=all and idempotence by default (Kafka ≥ 3's producer defaults); only failed
    deliveries are reported back, so a successful record costs no Python callback."""
    settings: dict[str, object] = {"acks": "all", "enable.idempotence": True, "linger.ms": 5,
                                   "partitioner": "murmur2_random"}
    settings.update(client)
    settings.update({"bootstrap.servers": bootstrap_servers, "delivery.report.only.error": True})
    return settings


class RowWriter:
    """Sends the rows of Arrow batches to Kafka; `close()` waits for every acknowledgement."""

    def __init__(self, bootstrap_servers: str, client: Mapping[str, object], columns: SinkColumns,
                 topic: str | None) -> None:
        self._errors: list[str] = []
        self._producer = Producer({**producer_settings(bootstrap_servers, client), "on_delivery": self._delivered})
        self._columns = columns
        self._topic = topic
        self._partition_counts: dict[str, int] = {}
        self.rows = 0

    def _delivered(self, err: object, msg: object) -> None:
        if err is not None:
            where = f"topic {msg.topic()}, partition {msg.partition()}"  # type: ignore[attr-defined]
            self._errors.append(f"{err} ({where})")

    def write(self, batch: pa.RecordBatch) -> None:
        """Queue every row of `batch`; raises the first Kafka error seen so far."""
        c, n = self._columns, batch.num_rows
        values = batch.column(c.value).to_pylist()
        if self._topic or c.topic is None:
            topics: list = [self._topic] * n
        else:
            topics = batch.column(c.topic).to_pylist()
            if None in topics:
                raise KafkaWriteError("null topic present in the data. Use the topic option for setting a topic.")
        keys = batch.column(c.key).to_pylist() if c.key is not None else [None] * n
        partitions = self._partitions_for(batch, topics, keys)
        if c.headers is None:
            rows = zip(topics, values, keys, partitions)
        else:
            headers = [[(h["key"], h["value"]) for h in row] if row else None
                       for row in batch.column(c.headers).to_pylist()]
            rows = zip(topics, values, keys, partitions, headers)
        produce = self._producer.produce
        if c.headers is not None:  # produce()'s fifth positional parameter is on_delivery
            def produce(topic, value, key, partition, headers, _produce=produce):  # noqa: ANN001, ANN202
                _produce(topic, value, key, partition, headers=headers)
        for chunk in iter(lambda: list(itertools.islice(rows, _POLL_EVERY)), []):
            for row in chunk:
                try:
                    produce(*row)
                except BufferError:  # librdkafka's queue is full: let it drain, then queue again
                    self._produce_when_room(produce, row)
            self._producer.poll(0)
            self._raise_if_failed()
        self.rows += n

    def _partitions_for(self, batch: pa.RecordBatch, topics: list, keys: list) -> list[int]:
        """The partition column where set, else murmur2 of the key, else librdkafka's choice."""
        c, n = self._columns, batch.num_rows
        given = batch.column(c.partition).to_pylist() if c.partition is not None else [None] * n
        if c.key is None:
            return [_UNASSIGNED if p is None else p for p in given]
        return [p if p is not None else _UNASSIGNED if k is None else partition_for_key(_bytes(k), self._count(t))
                for p, k, t in zip(given, keys, topics)]

    def _produce_when_room(self, produce: Callable[..., None], row: tuple) -> None:
        while True:
            self._producer.poll(0.05)
            self._raise_if_failed()
            try:
                produce(*row)
                return
            except BufferError:
                continue

    def _count(self, topic: str) -> int:
        """Partitions of `topic` (metadata, once per topic; asking may auto-create it)."""
        count = self._partition_counts.get(topic)
        if count is None:
            metadata = self._producer.list_topics(topic, timeout=30)
            info = metadata.topics.get(topic)
            if info is None or info.error is not None or not info.partitions:
                raise KafkaWriteError(f"no partitions for topic {topic}: {info.error if info else 'unknown topic'}")
            count = self._partition_counts[topic] = len(info.partitions)
        return count

    def _raise_if_failed(self) -> None:
        if self._errors:
            raise KafkaWriteError(f"Kafka refused {len(self._errors)} record(s): {self._errors[0]}")

    def abandon(self) -> None:
        """Drop what is still queued (the task failed; Spark will retry or fail the job)."""
        self._producer.purge()
        self._producer.flush(0)
        self._release()

    def _release(self) -> None:
        # The producer holds our delivery callback, so writer and producer form a cycle that
        # only the garbage collector would break: drop it now, and librdkafka disconnects.
        self._producer = None  # type: ignore[assignment]

    def close(self, timeout_s: float = FLUSH_TIMEOUT_S) -> int:
        """Wait for every acknowledgement; the number of rows written, or KafkaWriteError."""
        try:
            left = self._producer.flush(timeout_s)
        except KafkaException as e:
            raise KafkaWriteError(str(e)) from None
        finally:
            self._release()
        self._raise_if_failed()
        if left:
            raise KafkaWriteError(f"{left} record(s) not acknowledged within {timeout_s:.0f} s")
        return self.rows


def _bytes(key: object) -> bytes:
    return key.encode() if isinstance(key, str) else key  # type: ignore[return-value]


def arrow_sink_columns(schema: pa.Schema, topic: str | None) -> SinkColumns:
    """The Kafka write columns of an Arrow schema (Parquet files, Ray ingestion), by
    Spark's rules: the Arrow types named as Spark names them."""
    return sink_columns({f.name: _spark_type(f.type) for f in schema}, topic)


def _spark_type(t: pa.DataType) -> str:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "binary"
    if pa.types.is_int32(t):
        return "int"
    if pa.types.is_list(t) and pa.types.is_struct(t.value_type):
        fields = ",".join(f"{f.name}:{_spark_type(f.type)}" for f in t.value_type)
        return f"array<struct<{fields}>>"
    return str(t)
