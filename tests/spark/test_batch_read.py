"""Batch reads: exactly the records the real clients produced, every column, by offsets
and by timestamps, split for minPartitions."""
from __future__ import annotations

import json
import uuid
from typing import Iterator

import pytest

from tests.spark.clients import Record, consume, create_topic, produce, spark_records
from tests.topics import delete_topics

COUNT = 200


def reader(spark, bootstrap: str, **options: str):  # noqa: ANN001, ANN201 - pyspark objects
    r = spark.read.format("rafka").option("kafka.bootstrap.servers", bootstrap).option("includeHeaders", "true")
    for name, value in options.items():
        r = r.option(name, value)
    return r.load()


@pytest.fixture(scope="module")
def two_topics(bootstrap: str) -> Iterator[tuple[str, str, list[Record]]]:
    """A CreateTime and a LogAppendTime topic of 4 partitions, with what kafka-python saw."""
    created, appended = f"ct-{uuid.uuid4().hex[:8]}", f"lat-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, created, 4)
    create_topic(bootstrap, appended, 4, {"message.timestamp.type": "LogAppendTime"})
    try:
        expected = produce(bootstrap, created, COUNT)
        produce(bootstrap, appended, COUNT)
        by_consumer = consume(bootstrap, appended, COUNT)
        assert consume(bootstrap, created, COUNT) == sorted(expected)  # the clients agree with each other
        assert {r.timestamp_type for r in by_consumer} == {1}
        yield created, appended, sorted(expected + by_consumer)
    finally:
        delete_topics(bootstrap, [created, appended])


def test_batch_read_of_4_partitions_returns_exactly_the_produced_records(spark, bootstrap, two_topics) -> None:
    created, appended, expected = two_topics
    df = reader(spark, bootstrap, subscribe=f"{created},{appended}")
    assert [f"{f.name}:{f.dataType.simpleString()}" for f in df.schema.fields] == [
        "key:binary", "value:binary", "topic:string", "partition:int", "offset:bigint", "timestamp:timestamp",
        "timestampType:int", "headers:array<struct<key:string,value:binary>>"]
    assert df.rdd.getNumPartitions() == 8  # one per topic-partition
    got = spark_records(df)
    assert got == expected
    assert {r.partition for r in got} == {0, 1, 2, 3} and {r.timestamp_type for r in got} == {0, 1}


def test_without_include_headers_the_schema_is_sparks_seven_columns(spark, bootstrap, two_topics) -> None:
    created, _, expected = two_topics
    df = spark.read.format("rafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", created).load()
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    assert sorted((r.partition, r.offset, r.key, r.value) for r in df.collect()) == sorted(
        (r.partition, r.offset, r.key, r.value) for r in expected if r.topic == created)


def test_ranges_by_offsets_read_exactly_the_range(spark, bootstrap, new_topic) -> None:
    topic = new_topic(4)
    expected = produce(bootstrap, topic, COUNT)
    latest = {p: max(r.offset for r in expected if r.partition == p) + 1 for p in range(4)}
    starting = {topic: {"0": 3, "1": -2, "2": latest[2], "3": 1}}
    ending = {topic: {"0": -1, "1": 5, "2": latest[2], "3": latest[3] - 1}}
    df = reader(spark, bootstrap, assign=json.dumps({topic: [0, 1, 2, 3]}),
                startingOffsets=json.dumps(starting), endingOffsets=json.dumps(ending))
    want = [r for r in expected if (r.partition == 0 and r.offset >= 3) or (r.partition == 1 and r.offset < 5)
            or (r.partition == 3 and 1 <= r.offset < latest[3] - 1)]
    assert spark_records(df) == sorted(want)


def test_ranges_by_timestamp_read_from_the_first_record_at_or_after_it(spark, bootstrap, new_topic) -> None:
    topic = new_topic(2)
    base = 1_700_000_000_000
    expected = produce(bootstrap, topic, 100, timestamp_ms=base)  # timestamps base .. base+99
    got = spark_records(reader(spark, bootstrap, subscribe=topic, startingTimestamp=str(base + 40),
                               endingTimestamp=str(base + 70)))
    assert got == sorted(r for r in expected if base + 40 <= r.timestamp_ms < base + 70)
    by_partition = {topic: {"0": base + 90, "1": base}}
    got = spark_records(reader(spark, bootstrap, subscribe=topic, startingOffsetsByTimestamp=json.dumps(by_partition)))
    assert got == sorted(r for r in expected if r.partition == 1 or r.timestamp_ms >= base + 90)


def test_a_timestamp_past_every_record_fails_the_read_unless_the_strategy_says_latest(spark, bootstrap,
                                                                                     new_topic) -> None:
    topic = new_topic(1)
    produce(bootstrap, topic, 10, timestamp_ms=1_700_000_000_000)
    with pytest.raises(Exception, match=f"No offset matched from request of topic-partition {topic}-0"):
        reader(spark, bootstrap, subscribe=topic, startingTimestamp="1800000000000").collect()
    assert reader(spark, bootstrap, subscribe=topic, startingTimestamp="1800000000000",
                  startingOffsetsByTimestampStrategy="latest").count() == 0


def test_min_partitions_splits_each_range_into_ordered_contiguous_pieces(spark, bootstrap, new_topic) -> None:
    topic = new_topic(4)
    expected = [r for p in range(4) for r in produce(bootstrap, topic, 50, start=50 * p, partition=p)]
    df = reader(spark, bootstrap, subscribe=topic, minPartitions="10")
    # minPartitions is a hint, as in Spark: each range gets round(50 / 200 * 10) = round(2.5) = 3
    # pieces, so 12 (with uneven ranges the rounding can as well give fewer than asked for).
    assert df.rdd.getNumPartitions() == 12
    rows = df.selectExpr("spark_partition_id() AS task", "partition", "offset").collect()
    assert sorted((r.partition, r.offset) for r in rows) == sorted((r.partition, r.offset) for r in expected)
    tasks: dict[int, list[tuple[int, int]]] = {}
    for r in rows:
        tasks.setdefault(r.task, []).append((r.partition, r.offset))
    for pieces in tasks.values():  # each task: one partition, consecutive offsets, in order
        assert len({p for p, _ in pieces}) == 1
        offsets = [o for _, o in pieces]
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets)))
    assert spark_records(df) == sorted(expected)


@pytest.mark.parametrize("name,value,message", [
    ("startingOffset", "earliest", "Unknown option 'startingoffset'.*did you mean 'startingOffsets'"),
    ("startingOffsets", "latest", "starting offset can't be latest for batch queries"),
    ("kafka.no.such.setting", "1", "No such configuration property: \"no.such.setting\""),
])
def test_a_bad_option_fails_the_read_naming_it(spark, bootstrap, name: str, value: str, message: str) -> None:
    with pytest.raises(Exception, match=message):
        reader(spark, bootstrap, subscribe="any-topic", **{name: value}).collect()
