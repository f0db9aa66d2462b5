"""Batch and streaming writes: every row lands readable by kafka-python, keyed rows on the
partition kafka-python's default partitioner picks, and a refused record fails the job."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.spark.clients import Record, consume, produce

HEADERS_TYPE = "array<struct<key:string,value:binary>>"


def written(records: list[Record]) -> Counter:
    """What a write must deliver, whatever partitions and offsets it lands on."""
    return Counter((r.topic, r.key, r.value, r.headers) for r in records)


def assert_keys_where_kafka_python_puts_them(got: list[Record], reference: list[Record]) -> None:
    """Each keyed record is on the partition kafka-python chose for the same key (same count)."""
    chosen = {r.key: r.partition for r in reference if r.key is not None}
    keyed = [r for r in got if r.key is not None]
    assert keyed and all(r.partition == chosen[r.key] for r in keyed)


def test_batch_write_lands_every_row_where_kafka_python_would(spark, bootstrap, new_topic) -> None:
    reference, out_a, out_b = new_topic(4, prefix="ref"), new_topic(4, prefix="out"), new_topic(3, prefix="out")
    sent = produce(bootstrap, reference, 120)  # kafka-python's partitioner picks each partition
    rows = [(r.key.decode() if r.key else None, r.value, out_a if i % 3 else out_b,
             [{"key": k, "value": v} for k, v in r.headers], 2 if i % 10 == 1 else None)
            for i, r in enumerate(sent)]
    df = spark.createDataFrame(rows, f"key string, value binary, topic string, headers {HEADERS_TYPE}, partition int")
    df.write.format("rafka").option("kafka.bootstrap.servers", bootstrap).save()  # Spark's default save mode

    got_a, got_b = consume(bootstrap, out_a, 80), consume(bootstrap, out_b, 40)
    expected = [r._replace(topic=out_a if i % 3 else out_b) for i, r in enumerate(sent)]
    assert written(got_a + got_b) == written(expected)
    explicit = {r.value for i, r in enumerate(sent) if i % 10 == 1}
    assert all(r.partition == 2 for r in got_a + got_b if r.value in explicit)
    assert_keys_where_kafka_python_puts_them([r for r in got_a if r.value not in explicit], sent)
    # three partitions: murmur2 over 3, as kafka-python computes it
    from kafka.partitioner.default import murmur2
    assert all(r.partition == (murmur2(r.key) & 0x7FFFFFFF) % 3 for r in got_b if r.key and r.value not in explicit)


def test_streaming_write_lands_every_row_where_kafka_python_would(spark, bootstrap, new_topic,
                                                                  tmp_path: Path) -> None:
    source, target = new_topic(4, prefix="src"), new_topic(4, prefix="dst")
    sent = produce(bootstrap, source, 150)
    query = (spark.readStream.format("rafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", source)
             .option("startingOffsets", "earliest").option("includeHeaders", "true").load()
             .selectExpr("key", "value", "headers")
             .writeStream.format("rafka").option("kafka.bootstrap.servers", bootstrap).option("topic", target)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    assert query.awaitTermination(120) and query.exception() is None
    got = consume(bootstrap, target, 150)
    assert written(got) == written([r._replace(topic=target) for r in sent])
    assert_keys_where_kafka_python_puts_them(got, sent)


def test_a_record_kafka_refuses_fails_the_job_with_kafkas_error(spark, bootstrap, new_topic) -> None:
    topic = new_topic(1, **{"max.message.bytes": "2048"})
    df = spark.createDataFrame([(b"small",), (b"x" * 8192,), (b"small too",)], "value binary")
    with pytest.raises(Exception, match=r"(?i)Kafka refused \d+ record.*MSG_SIZE_TOO_LARGE.*message size too large"):
        df.write.format("rafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save()


def test_overwrite_and_unusable_dataframes_are_refused(spark, bootstrap) -> None:
    df = spark.createDataFrame([("v",)], "value string")
    writer = df.write.format("rafka").option("kafka.bootstrap.servers", bootstrap)
    with pytest.raises(Exception, match="Save mode Overwrite not allowed for Kafka"):
        writer.option("topic", "t").mode("overwrite").save()
    with pytest.raises(Exception, match="topic option required when no 'topic' attribute is present"):
        df.write.format("rafka").option("kafka.bootstrap.servers", bootstrap).save()
