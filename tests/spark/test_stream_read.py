"""Streaming reads: checkpointed restarts resume exactly, maxOffsetsPerTrigger bounds each
micro-batch, a pattern picks up a topic created while the query runs, and offsets lost to
the log start moving fail the query unless failOnDataLoss=false."""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.spark.clients import Record, produce, spark_records
from tests.waiting import wait_until

QUERY_TIMEOUT_S = 120


def stream(spark, bootstrap: str, **options: str):  # noqa: ANN001, ANN201 - pyspark objects
    r = spark.readStream.format("rafka").option("kafka.bootstrap.servers", bootstrap)
    for name, value in {"startingOffsets": "earliest", "includeHeaders": "true", **options}.items():
        r = r.option(name, value)
    return r.load()


def run_available_now(df, out: Path, checkpoint: Path) -> list[int]:  # noqa: ANN001 - a streaming DataFrame
    """Run the query to the end of what is there now; the rows of each micro-batch."""
    query = (df.writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(QUERY_TIMEOUT_S), "availableNow query did not finish"
    if query.exception() is not None:
        raise query.exception()
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def test_available_now_restart_from_checkpoint_reads_exactly_the_new_records(spark, bootstrap, new_topic,
                                                                             tmp_path: Path) -> None:
    topic = new_topic(4)
    first = produce(bootstrap, topic, 100)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    batches = run_available_now(stream(spark, bootstrap, subscribe=topic, maxOffsetsPerTrigger="40"), out, checkpoint)
    assert sum(batches) == 100 and max(batches) <= 40 and len(batches) >= 3  # maxOffsetsPerTrigger holds
    assert spark_records(spark.read.parquet(str(out))) == sorted(first)

    second = produce(bootstrap, topic, 60, start=100)
    batches = run_available_now(stream(spark, bootstrap, subscribe=topic, maxOffsetsPerTrigger="40"), out, checkpoint)
    assert sum(batches) == 60  # only the new records
    assert spark_records(spark.read.parquet(str(out))) == sorted(first + second)  # no duplicates, no gaps


def test_subscribe_pattern_picks_up_a_topic_created_while_the_query_runs(spark, bootstrap, new_topic) -> None:
    prefix = f"pat-{uuid.uuid4().hex[:8]}"
    first = produce(bootstrap, new_topic(2, prefix=prefix), 20)
    name = f"pattern_{uuid.uuid4().hex[:8]}"
    query = (stream(spark, bootstrap, subscribePattern=f"{prefix}-.*").writeStream.format("memory").queryName(name)
             .trigger(processingTime="500 milliseconds").start())
    try:
        def rows() -> list[Record]:
            return spark_records(spark.table(name))

        wait_until(lambda: rows() == sorted(first), timeout_s=60, message="first topic read")
        second = produce(bootstrap, new_topic(2, prefix=prefix), 30)
        wait_until(lambda: rows() == sorted(first + second), timeout_s=60, message="new topic picked up")
    finally:
        query.stop()


def test_offsets_lost_to_the_log_start_fail_the_query_unless_fail_on_data_loss_is_false(
        spark, bootstrap, new_topic, tmp_path: Path) -> None:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    topic = new_topic(1)
    first = produce(bootstrap, topic, 50)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    run_available_now(stream(spark, bootstrap, subscribe=topic), out, checkpoint)
    second = produce(bootstrap, topic, 50, start=50)
    # The log start moves to 80 (what retention does to old segments): offsets 50-79 are gone.
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 0, 80)]).values():
        future.result(30)

    with pytest.raises(Exception, match=rf"(?s){topic}-0's offset was changed from 50 to 80.*failOnDataLoss"):
        run_available_now(stream(spark, bootstrap, subscribe=topic), out, checkpoint)
    run_available_now(stream(spark, bootstrap, subscribe=topic, failOnDataLoss="false"), out, checkpoint)
    assert spark_records(spark.read.parquet(str(out))) == sorted(first + [r for r in second if r.offset >= 80])
