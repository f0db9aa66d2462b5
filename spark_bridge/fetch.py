"""Executor side of a read: fetch exactly one offset range of one partition, in order, with
librdkafka over TCP, and hand it to Spark as Arrow record batches in the Kafka source schema.

Why confluent-kafka: librdkafka fetches, decompresses and parses batches in C on its own
threads, so the Python work per record is a handful of attribute reads; it is already a
test dependency, speaks every codec, and reads from any Kafka-protocol broker, so the
bridge works against Kafka as well as rafka.
"""
from __future__ import annotations

import logging
import time
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import Consumer, KafkaError
from confluent_kafka import TopicPartition as CkTopicPartition

from rafka.spark_bridge.kafka_lookup import consumer_settings
from rafka.spark_bridge.options import ReadOptions
from rafka.spark_bridge.planning import DataLossError, OffsetRange, data_loss_message

log = logging.getLogger(__name__)

BATCH_ROWS = 10_000  # records per Arrow batch (and per consume call)
# librdkafka's TIMESTAMP_CREATE_TIME (1) and TIMESTAMP_LOG_APPEND_TIME (2) are Kafka's
# TimestampType ids (CreateTime 0, LogAppendTime 1, as in Spark's column) plus one.
_LIBRDKAFKA_TYPE_OFFSET = 1


def read_range(rng: OffsetRange, options: ReadOptions, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Records with offsets in [from, until) of one partition, as Arrow batches of `schema`.

    Offsets missing inside the range (compaction, transaction markers) are simply absent. An
    offset the log no longer has is data loss: an error, or with failOnDataLoss=false a
    warning and a jump to the log start. No record for `pollTimeoutMs` is an error.
    """
    if rng.size <= 0:
        return
    consumer = Consumer({**consumer_settings(options, "executor"), "enable.partition.eof": True})
    try:
        consumer.assign([CkTopicPartition(rng.tp.topic, rng.tp.partition, rng.from_offset)])
        builder = _BatchBuilder(rng, options.include_headers, schema)
        next_offset, last_progress = rng.from_offset, time.monotonic()
        while next_offset < rng.until_offset:
            messages = consumer.consume(min(BATCH_ROWS, rng.until_offset - next_offset), timeout=0.5)
            records = [m for m in messages if m.error() is None]
            if len(records) != len(messages):
                for m in messages:
                    if m.error() is not None:
                        next_offset = _on_error(m, consumer, rng, next_offset, options)
            if records and records[-1].offset() >= rng.until_offset:
                records = [m for m in records if m.offset() < rng.until_offset]
            if records:
                next_offset = max(next_offset, records[-1].offset() + 1)
                last_progress = time.monotonic()
                yield builder.batch(records)
            elif time.monotonic() - last_progress > options.poll_timeout_ms / 1000 and next_offset < rng.until_offset:
                raise TimeoutError(f"Cannot fetch record for offset {next_offset} of {rng.tp} in "
                                   f"{options.poll_timeout_ms} milliseconds")
    finally:
        consumer.close()


def _on_error(m: object, consumer: Consumer, rng: OffsetRange, next_offset: int, options: ReadOptions) -> int:
    """The next offset to read after an error event: the end of the range at a partition EOF
    past it (the rest of the range holds no records), the log start after lost offsets."""
    error = m.error()  # type: ignore[attr-defined]
    if error.code() == KafkaError._PARTITION_EOF:
        return rng.until_offset if m.offset() >= rng.until_offset else next_offset  # type: ignore[attr-defined]
    if error.code() == KafkaError._AUTO_OFFSET_RESET:
        return _skip_lost(consumer, rng, next_offset, options)
    raise RuntimeError(f"fetching {rng.tp} at offset {next_offset}: {error}")


def _skip_lost(consumer: Consumer, rng: OffsetRange, offset: int, options: ReadOptions) -> int:
    low, _ = consumer.get_watermark_offsets(CkTopicPartition(rng.tp.topic, rng.tp.partition), timeout=30, cached=False)
    problem = f"Cannot fetch offset {offset} of {rng.tp}: the earliest available offset is {low}"
    if options.fail_on_data_loss or low <= offset:
        raise DataLossError(data_loss_message([problem], failing=True))
    log.warning(data_loss_message([problem], failing=False))
    resume = min(low, rng.until_offset)
    consumer.assign([CkTopicPartition(rng.tp.topic, rng.tp.partition, resume)])
    return resume


class _BatchBuilder:
    """Messages of one partition → an Arrow batch in Spark's Kafka schema (the schema Spark
    asked for, so the JVM side accepts it as it is)."""

    def __init__(self, rng: OffsetRange, include_headers: bool, schema: pa.Schema) -> None:
        self._topic, self._partition = rng.tp.topic, rng.tp.partition
        self._headers = include_headers
        self._schema = schema
        self._timestamp = schema.field("timestamp").type

    def batch(self, messages: list) -> pa.RecordBatch:
        n = len(messages)
        stamps = [m.timestamp() for m in messages]
        columns = [
            pa.array([m.key() for m in messages], pa.binary()),
            pa.array([m.value() for m in messages], pa.binary()),
            pa.array([self._topic] * n, pa.string()),
            pa.array([self._partition] * n, pa.int32()),
            pa.array([m.offset() for m in messages], pa.int64()),
            pc.multiply(pa.array([s[1] for s in stamps], pa.int64()), 1000).cast(self._timestamp),
            pc.subtract(pa.array([s[0] for s in stamps], pa.int32()), _LIBRDKAFKA_TYPE_OFFSET),
        ]
        if self._headers:
            columns.append(pa.array([m.headers() or [] for m in messages], self._schema.field("headers").type))
        return pa.RecordBatch.from_arrays(columns, schema=self._schema)
