#!/usr/bin/env python
r"""Streaming word count: read lines from a topic, count words, write the counts to another
topic, checkpointed, with the `rafka` Spark data source (a Kafka job, but for the format name).

Try it from the repository's root after `make setup`, on a fresh broker: neither topic needs
to exist beforehand, each is created by its first use (`auto.create.topics.enable`, as in
Kafka). kcat stands for any Kafka client here (`make setup` installs it as root):

    .venv/bin/rafka up --detach                      # prints the bootstrap servers: 127.0.0.1:9092
    printf 'the quick brown fox\njumps over the lazy dog\nThe dog sleeps\n' | kcat -P -b 127.0.0.1:9092 -t lines
    .venv/bin/python examples/streaming_word_count.py --bootstrap-server 127.0.0.1:9092 \
        --input-topic lines --output-topic word-counts --checkpoint /tmp/wc-checkpoint --available-now
    kcat -C -b 127.0.0.1:9092 -t word-counts -e -f '%k=%s\n'     # the=3, dog=2, quick=1, ...
    .venv/bin/rafka down                             # stops what `up --detach` started

Each output record is keyed by the word, its value the word's running count (as text), so a
compacted topic keeps the latest count per word. Output mode is `complete` (every count,
each micro-batch): PySpark's Python data source sinks take append and complete, not update.
`--available-now` processes what is there and stops (run it again later: it resumes from
the checkpoint, and writes every count again); without it the query runs until interrupted
(Ctrl-C), a micro-batch every 2 seconds. The counts are kept in 4 shuffle partitions
(`spark.sql.shuffle.partitions`, fixed by the checkpoint's first run), not Spark's 200,
which on one machine cost a Spark task and a Kafka producer each per micro-batch.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any


def word_counts(spark: Any, bootstrap: str, input_topic: str) -> Any:
    """The running count per word of the lines (record values) in `input_topic`."""
    from pyspark.sql import functions as F

    lines = (spark.readStream.format("rafka").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", input_topic).option("startingOffsets", "earliest").load())
    words = lines.select(F.explode(F.split(F.lower(F.col("value").cast("string")), r"\W+")).alias("word"))
    return words.where(F.col("word") != "").groupBy("word").count()


def start(spark: Any, bootstrap: str, input_topic: str, output_topic: str, checkpoint: str,
          available_now: bool = False) -> Any:
    """Start the query: counts → `output_topic`, key = word, value = count."""
    counts = word_counts(spark, bootstrap, input_topic)
    writer = (counts.selectExpr("word AS key", "cast(`count` AS string) AS value").writeStream
              .format("rafka").option("kafka.bootstrap.servers", bootstrap).option("topic", output_topic)
              .option("checkpointLocation", checkpoint).outputMode("complete"))
    writer = writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime="2 seconds")
    return writer.start()


def main() -> int:
    parser = argparse.ArgumentParser(description="Streaming word count between two topics.",
                                     epilog="example: streaming_word_count.py --bootstrap-server 127.0.0.1:9092 "
                                            "--input-topic lines --output-topic word-counts --checkpoint /tmp/wc")
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--input-topic", required=True)
    parser.add_argument("--output-topic", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--available-now", action="store_true", help="process what is there, then stop")
    args = parser.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from rafka.spark_bridge import register

    spark = SparkSession.builder.appName("word-count").config("spark.sql.shuffle.partitions", "4").getOrCreate()
    register(spark)
    query = start(spark, args.bootstrap_server, args.input_topic, args.output_topic, args.checkpoint,
                  args.available_now)
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
