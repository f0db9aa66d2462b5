"""An existing `format("kafka")` job, with Spark's own options table (`kafka.` client
settings and all), runs unchanged on a session that registered rafka with the alias
(the same job with `format("rafka")` is what the other tests of this tier run)."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from tests.spark.clients import consume, produce

# What a Spark Structured Streaming job against Kafka typically carries (Spark's docs and
# the Java client's settings); the Java-only names are translated for librdkafka.
SOURCE_OPTIONS = {
    "startingOffsets": "earliest", "failOnDataLoss": "true", "includeHeaders": "true",
    "maxOffsetsPerTrigger": "1000", "minPartitions": "2", "groupIdPrefix": "orders-job",
    "kafkaConsumer.pollTimeoutMs": "60000", "fetchOffset.numRetries": "3", "fetchOffset.retryIntervalMs": "500",
    "kafka.security.protocol": "PLAINTEXT", "kafka.client.id": "orders-job", "kafka.request.timeout.ms": "30000",
    "kafka.session.timeout.ms": "30000", "kafka.max.poll.records": "500", "kafka.fetch.max.wait.ms": "200",
    "kafka.receive.buffer.bytes": "65536", "kafka.default.api.timeout.ms": "60000",
}
SINK_OPTIONS = {
    "kafka.acks": "all", "kafka.linger.ms": "5", "kafka.compression.type": "lz4", "kafka.retries": "3",
    "kafka.max.request.size": "1048576", "kafka.buffer.memory": "33554432", "kafka.max.block.ms": "60000",
    "kafka.enable.idempotence": "true", "kafka.security.protocol": "PLAINTEXT",
}


def batch_job(spark, fmt: str, bootstrap: str, source: str, target: str) -> None:  # noqa: ANN001
    """A batch job as written for Spark's Kafka connector: read a topic, upper-case, write."""
    (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", source)
     .options(**SOURCE_OPTIONS).option("endingOffsets", "latest").load()
     .selectExpr("key", "upper(cast(value AS string)) AS value", "headers")
     .write.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("topic", target)
     .options(**SINK_OPTIONS).save())


def streaming_job(spark, fmt: str, bootstrap: str, source: str, target: str, checkpoint: Path) -> None:  # noqa: ANN001
    query = (spark.readStream.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", source)
             .options(**SOURCE_OPTIONS).load()
             .selectExpr("key", "upper(cast(value AS string)) AS value", "headers")
             .writeStream.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("topic", target)
             .options(**SINK_OPTIONS).option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    assert query.awaitTermination(120) and query.exception() is None


def test_sparks_kafka_options_table_works_unchanged_but_for_the_format_name(spark, bootstrap, new_topic,
                                                                            tmp_path: Path) -> None:
    source = new_topic(2, prefix="orders")
    sent = produce(bootstrap, source, 60)
    want = Counter((r.key, r.value.upper(), r.headers) for r in sent)
    batch_target, stream_target = new_topic(2, prefix="batch-out"), new_topic(2, prefix="stream-out")
    batch_job(spark, "kafka", bootstrap, source, batch_target)
    streaming_job(spark, "kafka", bootstrap, source, stream_target, tmp_path / "checkpoint")
    for target in (batch_target, stream_target):
        assert Counter((r.key, r.value, r.headers) for r in consume(bootstrap, target, 60)) == want, target
