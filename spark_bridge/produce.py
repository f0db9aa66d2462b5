"""Writing rows to Kafka from Arrow batches: what a Spark write task and a Ray ingestion task
do. librdkafka with acks=all and the idempotent producer (unless `kafka.` options say
otherwise); keyed rows go to the partition murmur2 picks, as every Kafka client's default
partitioner does; the first delivery error fails the writer with Kafka's error, so a
task never reports success for rows Kafka refused. Before its first record to a topic (or to a
partition beyond the count it knows) the writer waits for the topic's metadata as Kafka's
producer does, up to `max.block.ms` (`rafka.common.metadata_wait`): a topic that the write
auto-creates is written once its partitions are there, a missing one fails after that wait.
"""
from __future__ import annotations

import itertools
import logging
from typing import Callable, Mapping

import pyarrow as pa
from confluent_kafka import KafkaError as CkKafkaError
from confluent_kafka import KafkaException, Producer

from rafka.common.errors import ErrorCode, KafkaError
from rafka.common.metadata_wait import (MAX_BLOCK_MS_DEFAULT, RETRY_BACKOFF_MAX_MS_DEFAULT, RETRY_BACKOFF_MS_DEFAULT,
                                        MetadataWait, TopicMetadata)
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
    """Sends the rows of Arrow batches to Kafka; `close()` waits for every acknowledgement.
    `max_block_ms` bounds the wait for a topic's metadata (Kafka's `max.block.ms`); the
    backoff between asks is librdkafka's (and Java's) `retry.backoff.ms`/`retry.backoff.max.ms`."""

    def __init__(self, bootstrap_servers: str, client: Mapping[str, object], columns: SinkColumns,
                 topic: str | None, *, max_block_ms: int = MAX_BLOCK_MS_DEFAULT) -> None:
        self._errors: list[str] = []
        self._producer = Producer({**producer_settings(bootstrap_servers, client), "on_delivery": self._delivered})
        self._columns = columns
        self._topic = topic
        self._partition_counts: dict[str, int] = {}
        self._metadata = MetadataWait(
            self._topic_metadata, max_block_ms=max_block_ms,
            retry_backoff_ms=int(client.get("retry.backoff.ms", RETRY_BACKOFF_MS_DEFAULT)),  # type: ignore[call-overload]
            retry_backoff_max_ms=int(client.get("retry.backoff.max.ms",  # type: ignore[call-overload]
                                                RETRY_BACKOFF_MAX_MS_DEFAULT)))
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
        self._await_metadata(topics, given if c.partition is not None else None)
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

    def _await_metadata(self, topics: list, given: list | None) -> None:
        """Every topic of the batch in metadata, and every partition the rows name below its
        topic's count, before any row is queued: Kafka's producer waits so in `send`."""
        distinct = {self._topic} if self._topic else set(topics)
        highest: dict[str, int] = {}
        for topic, partition in zip(topics, given or ()):
            if partition is not None and partition > highest.get(topic, -1):
                highest[topic] = partition
        for topic in distinct:
            self._count(topic, highest.get(topic))

    def _count(self, topic: str, partition: int | None = None) -> int:
        """Partitions of `topic`, waited for once per topic (asking may auto-create it), and again
        when a row names a partition beyond that count; KafkaWriteError after `max.block.ms`."""
        count = self._partition_counts.get(topic)
        if count is None or (partition is not None and partition >= count):
            try:
                count = self._partition_counts[topic] = self._metadata.partition_count(topic, partition)
            except KafkaError as e:
                raise KafkaWriteError(str(e)) from e
        return count

    def _topic_metadata(self, topic: str, timeout_ms: int) -> TopicMetadata:
        """One Metadata request for `topic` through the producer (librdkafka's cache learns it too)."""
        try:
            metadata = self._producer.list_topics(topic, timeout=timeout_ms / 1000)
        except KafkaException as e:
            return TopicMetadata(error_code(e.args[0]))
        info = metadata.topics.get(topic)
        if info is None:
            return TopicMetadata(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if info.error is not None:
            return TopicMetadata(error_code(info.error))
        return TopicMetadata(ErrorCode.NONE, len(info.partitions))

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


def error_code(error: CkKafkaError) -> ErrorCode:
    """A librdkafka error as Kafka's code: a broker's error keeps its number; librdkafka's own
    (negative) ones mean the request got no answer."""
    code = error.code()
    if code >= ErrorCode.UNKNOWN_SERVER_ERROR:
        try:
            return ErrorCode(code)
        except ValueError:
            return ErrorCode.UNKNOWN_SERVER_ERROR
    return ErrorCode.REQUEST_TIMED_OUT if code == CkKafkaError._TIMED_OUT else ErrorCode.NETWORK_EXCEPTION


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
