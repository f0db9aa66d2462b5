"""The examples run as documented: the streaming word count and Parquet → topic."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from examples.parquet_to_topic import parquet_to_topic
from examples.streaming_word_count import start
from tests.spark.clients import consume

LINES = ["the quick brown fox", "jumps over the lazy dog", "The dog sleeps", "quick quick"]


def test_streaming_word_count_writes_each_words_count_to_the_output_topic(spark, bootstrap, new_topic,
                                                                          tmp_path: Path) -> None:
    from kafka import KafkaProducer

    lines, counts = new_topic(2, prefix="lines"), new_topic(2, prefix="counts")
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for line in LINES:
        producer.send(lines, value=line.encode())
    producer.flush(30)
    producer.close()
    query = start(spark, bootstrap, lines, counts, str(tmp_path / "checkpoint"), available_now=True)
    assert query.awaitTermination(120) and query.exception() is None
    expected = Counter(word for line in LINES for word in line.lower().split())
    records = consume(bootstrap, counts, len(expected))
    latest = {r.key.decode(): int(r.value) for r in sorted(records, key=lambda r: (r.partition, r.offset))}
    assert latest == expected


def test_parquet_to_topic_writes_every_row_as_json_keyed_by_the_column(spark, bootstrap, new_topic,
                                                                       tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"user_id": i % 5, "event": f"click-{i}"} for i in range(40)]
    pq.write_table(pa.Table.from_pylist(rows[:25]), tmp_path / "a.parquet")
    pq.write_table(pa.Table.from_pylist(rows[25:]), tmp_path / "b.parquet")
    topic = new_topic(3, prefix="events")
    assert parquet_to_topic(spark, [str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")], bootstrap, topic,
                            key_column="user_id") == 40
    got = consume(bootstrap, topic, 40)
    assert sorted((r.key, json.loads(r.value)["event"]) for r in got) == sorted(
        (str(r["user_id"]).encode(), r["event"]) for r in rows)
    assert len({(r.key, r.partition) for r in got}) == 5  # one partition per key
