"""Writes to a topic that does not exist yet, as Kafka's producer (and so Spark's Kafka sink)
makes them: with automatic creation the first write creates the topic, waits for its
partitions (LEADER_NOT_AVAILABLE meanwhile) and lands every row; without it the write fails
after `kafka.max.block.ms` with UNKNOWN_TOPIC_OR_PARTITION."""
from __future__ import annotations

import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Iterator

import pytest

from tests.spark.clients import consume, produce
from tests.topics import user_topics


def fresh_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def test_batch_write_to_a_new_topic_creates_it_and_lands_every_row(spark, bootstrap) -> None:
    target = fresh_name("new-batch")
    assert target not in user_topics(bootstrap)
    # Keyed rows need the partition count (murmur2), keyless ones only the topic; two tasks,
    # each with its own producer, meet the topic while it is being created.
    rows = [(f"k{i % 7}" if i % 3 else None, f"v{i}") for i in range(60)]
    df = spark.createDataFrame(rows, "key string, value string").repartition(2)
    df.write.format("rafka").option("kafka.bootstrap.servers", bootstrap).option("topic", target).save()
    got = consume(bootstrap, target, len(rows))
    assert Counter((r.key, r.value) for r in got) == Counter(
        (k.encode() if k else None, v.encode()) for k, v in rows)


def test_streaming_write_to_a_new_topic_creates_it_and_lands_every_row(spark, bootstrap, new_topic,
                                                                       tmp_path: Path) -> None:
    source, target = new_topic(2, prefix="new-src"), fresh_name("new-stream")
    sent = produce(bootstrap, source, 50)
    query = (spark.readStream.format("rafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", source)
             .option("startingOffsets", "earliest").load().selectExpr("key", "value")
             .writeStream.format("rafka").option("kafka.bootstrap.servers", bootstrap).option("topic", target)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    assert query.awaitTermination(120) and query.exception() is None
    got = consume(bootstrap, target, len(sent))
    assert Counter((r.key, r.value) for r in got) == Counter((r.key, r.value) for r in sent)


@pytest.fixture(scope="module")
def no_auto_create_bootstrap(rafka_cluster, tmp_path_factory) -> Iterator[str]:
    """A broker of its own with `auto.create.topics.enable=false`, on the session's Ray (its
    own ZooKeeper and namespace; no topic is ever made on it)."""
    from rafka.cluster import Cluster
    from rafka.common.config import BrokerConfig

    cluster = Cluster(tmp_path_factory.mktemp("no-auto-create"), brokers=1, first_port=0,
                      config=BrokerConfig().replace(auto_create_topics_enable=False),
                      namespace=f"rafka-noauto-{uuid.uuid4().hex[:6]}")
    cluster.start()
    try:
        yield cluster.bootstrap_servers
    finally:
        cluster.stop()


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "keyless"])
def test_write_to_a_missing_topic_without_auto_creation_fails_after_max_block_ms(
        spark, no_auto_create_bootstrap: str, keyed: bool) -> None:
    from pyspark.errors import PythonException
    from py4j.protocol import Py4JJavaError

    target = fresh_name("absent")
    df = spark.createDataFrame([("k" if keyed else None, "v")], "key string, value string").coalesce(1)
    started = time.monotonic()
    with pytest.raises((PythonException, Py4JJavaError)) as failed:
        (df.write.format("rafka").option("kafka.bootstrap.servers", no_auto_create_bootstrap)
         .option("topic", target).option("kafka.max.block.ms", "2000").save())
    assert time.monotonic() - started >= 2.0
    message = str(failed.value)
    assert f"Topic {target} not present in metadata after 2000 ms" in message
    assert "UNKNOWN_TOPIC_OR_PARTITION" in message
