#!/usr/bin/env python
r"""Parquet → topic: load Parquet files into a Kafka topic with the `rafka` data source.

Try it from the repository's root after `make setup`, on a fresh broker, with Parquet files
of your own (here with a `user_id` column); the topic is created by the first write
(`auto.create.topics.enable`, as in Kafka), and kcat stands for any Kafka client:

    .venv/bin/rafka up --detach                      # prints the bootstrap servers: 127.0.0.1:9092
    .venv/bin/python examples/parquet_to_topic.py --bootstrap-server 127.0.0.1:9092 --topic events \
        --key-column user_id /data/events/*.parquet
    kcat -C -b 127.0.0.1:9092 -t events -e -f '%k %s\n'     # each row as JSON, keyed by its user_id
    .venv/bin/rafka down                             # stops what `up --detach` started

Every row becomes one record: the value is the row as JSON, the key (optional) one column
as text, so rows with the same key land on the same partition (Kafka's murmur2, as every
client's default partitioner). The Spark executors write in parallel, acks=all and
idempotent. For loads too big for the Spark executors alone, a Spark application that hosts
rafka on Ray-on-Spark can produce the files from Ray tasks on its workers instead:
`rafka.spark_bridge.ingest_parquet(paths, topic, handle.bootstrap_servers)`.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Sequence


def parquet_to_topic(spark: Any, paths: Sequence[str], bootstrap: str, topic: str,
                     key_column: str | None = None) -> int:
    """Write the rows of `paths` to `topic`; the number of rows written."""
    from pyspark.sql import functions as F

    rows = spark.read.parquet(*paths)
    columns = [F.to_json(F.struct(*rows.columns)).alias("value")]
    if key_column:
        columns.append(F.col(key_column).cast("string").alias("key"))
    records = rows.select(*columns)
    records.write.format("rafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save()
    return records.count()


def main() -> int:
    parser = argparse.ArgumentParser(description="Load Parquet files into a Kafka topic.",
                                     epilog="example: parquet_to_topic.py --bootstrap-server 127.0.0.1:9092 "
                                            "--topic events --key-column user_id /data/events/*.parquet")
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--key-column")
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from rafka.spark_bridge import register

    spark = SparkSession.builder.appName("parquet-to-topic").getOrCreate()
    register(spark)
    count = parquet_to_topic(spark, args.paths, args.bootstrap_server, args.topic, args.key_column)
    print(f"wrote {count} records to {args.topic}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
