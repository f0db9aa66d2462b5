#!/usr/bin/env python
"""Spark bridge throughput: a batch read and a batch write of 1,000,000 records of 100 B
through the `rafka` data source, beside the plain confluent-kafka consumer and producer on
the same topic in the same run, with the same client settings (the bridge's own).

  plain write   the producer alone: acks=all, idempotent, linger.ms=5, into topic A
  spark write   df.write.format("rafka") of the same rows (cached first) into topic B
  plain read    one consumer over topic A's partitions, touching every value
  spark read    spark.read.format("rafka") of topic A, counted (every column crosses Arrow)

Spark is warmed up first (a write and a read of 10,000 rows: Python workers started and
imports done, as in a running application; the first job of a fresh session runs 4-5×
slower), and each phase runs --repeat times: a run's spark and plain phases are a pair, and
the table shows each side's median [min-max] over the runs and the median of the runs' ratios.
Targets: spark read ≥ 0.5× plain read, spark write ≥ 0.5× plain write. To show where the
time goes, it also runs the bridge's executor code without Spark (fetch.read_range into
Arrow, produce.RowWriter from Arrow) in this process: plain → bridge is the Arrow
conversion, bridge → spark is Spark's Python worker and JVM transfer (with local[2], two
tasks at a time). rafka runs as users start it (`rafka up --detach`), Spark as local[2].
Progress to stderr, the table to stdout (--output json: one JSON document); exit 0 when every
phase ran.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import _kafka  # noqa: E402
import _rafka  # noqa: E402
import pyarrow as pa  # noqa: E402
from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka import TopicPartition as CkTopicPartition  # noqa: E402
from harness.pairs import paired_row  # noqa: E402
from harness.phases import log  # noqa: E402
from harness.report import add_output_options, finish  # noqa: E402
from harness.results_file import Recording  # noqa: E402
from harness.table import Row  # noqa: E402

from rafka.common.types import TopicPartition  # noqa: E402
from rafka.spark_bridge.fetch import read_range  # noqa: E402
from rafka.spark_bridge.kafka_lookup import KafkaLookup, consumer_settings  # noqa: E402
from rafka.spark_bridge.options import parse_read_options  # noqa: E402
from rafka.spark_bridge.planning import OffsetRange  # noqa: E402
from rafka.spark_bridge.produce import RowWriter, producer_settings  # noqa: E402
from rafka.spark_bridge.sink_columns import SinkColumns  # noqa: E402

PARTITIONS = 4
RECORD_SIZE = 100
TARGET = 0.5
KAFKA_SCHEMA = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
                          ("partition", pa.int32()), ("offset", pa.int64()),
                          ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32())])


def value(i: int) -> bytes:
    return str(i).rjust(RECORD_SIZE, "x").encode()


def timed(what: str, rows: int, run) -> float:  # noqa: ANN001 - a callable returning rows done
    log(f"{what} ...")
    started = time.perf_counter()
    done = run()
    elapsed = time.perf_counter() - started
    if done != rows:
        raise RuntimeError(f"{what}: {done} rows, expected {rows}")
    log(f"{what}: {rows / elapsed:,.0f} rows/s ({elapsed:.1f} s)")
    return rows / elapsed


def plain_write(bootstrap: str, topic: str, rows: int) -> int:
    failed: list = []
    producer = Producer({**producer_settings(bootstrap, {}), "on_delivery": lambda err, msg: failed.append(err)})
    for i in range(rows):
        while True:
            try:
                producer.produce(topic, value(i))
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(300) or failed:
        raise RuntimeError(f"plain producer: {failed[:1]}")
    return rows


def plain_read(bootstrap: str, topic: str, rows: int) -> int:
    options = parse_read_options({"kafka.bootstrap.servers": bootstrap, "subscribe": topic}, streaming=False)
    consumer = Consumer(consumer_settings(options, "bench"))
    consumer.assign([CkTopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    count, size = 0, 0
    deadline = time.monotonic() + 300
    while count < rows and time.monotonic() < deadline:
        for m in consumer.consume(10_000, timeout=0.5):
            if m.error() is None:
                size += len(m.value())
                count += 1
    consumer.close()
    return count


def bridge_read(bootstrap: str, topic: str) -> int:
    """The executor's read path without Spark: every partition through read_range."""
    options = parse_read_options({"kafka.bootstrap.servers": bootstrap, "subscribe": topic}, streaming=False)
    with KafkaLookup(options) as lookup:
        marks = lookup.watermarks([TopicPartition(topic, p) for p in range(PARTITIONS)])
    return sum(batch.num_rows for tp, m in marks.items()
               for batch in read_range(OffsetRange(tp, m.earliest, m.latest), options, KAFKA_SCHEMA))


def bridge_write(bootstrap: str, topic: str, rows: int) -> int:
    """The executor's write path without Spark: Arrow batches through RowWriter."""
    writer = RowWriter(bootstrap, {}, SinkColumns(value=0), topic)
    for start in range(0, rows, 10_000):
        writer.write(pa.record_batch([pa.array([value(i) for i in range(start, min(rows, start + 10_000))])],
                                     names=["value"]))
    return writer.close()


def start_spark():  # noqa: ANN201 - a SparkSession
    from pyspark.sql import SparkSession

    from rafka.spark_bridge import register

    spark = (SparkSession.builder.master("local[2]").appName("rafka-bench")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def measure(spark, boot: str, rows: int, run: int) -> dict[str, float]:  # noqa: ANN001 - a SparkSession
    """One run of every phase, on fresh topics (deleted after): rows/s by phase."""
    topics = {name: f"bench-{name}-{run}" for name in ("plain", "spark", "bridge", "warm")}
    for topic in topics.values():
        _kafka.create_topic(boot, topic, PARTITIONS)
    spark_read = spark.read.format("rafka").option("kafka.bootstrap.servers", boot)
    rate = {}
    try:
        warm = spark.range(10_000, numPartitions=PARTITIONS).selectExpr("cast(cast(id AS string) AS binary) AS value")
        warm.write.format("rafka").option("kafka.bootstrap.servers", boot).option("topic", topics["warm"]).save()
        assert spark_read.option("subscribe", topics["warm"]).load().count() == 10_000
        rate["plain write"] = timed("plain producer", rows, lambda: plain_write(boot, topics["plain"], rows))
        rate["bridge write"] = timed("bridge RowWriter, no Spark", rows,
                                     lambda: bridge_write(boot, topics["bridge"], rows))
        df = spark.range(rows, numPartitions=PARTITIONS).selectExpr(
            f"cast(lpad(cast(id AS string), {RECORD_SIZE}, 'x') AS binary) AS value").cache()
        assert df.count() == rows
        rate["spark write"] = timed("spark write", rows, lambda: (
            df.write.format("rafka").option("kafka.bootstrap.servers", boot).option("topic", topics["spark"])
            .save(), rows)[1])
        df.unpersist()
        rate["plain read"] = timed("plain consumer", rows, lambda: plain_read(boot, topics["plain"], rows))
        rate["bridge read"] = timed("bridge read_range, no Spark", rows, lambda: bridge_read(boot, topics["plain"]))
        rate["spark read"] = timed("spark read", rows,
                                   lambda: spark_read.option("subscribe", topics["plain"]).load().count())
        written = spark_read.option("subscribe", topics["spark"]).load().count()
        if written != rows:
            raise RuntimeError(f"the spark write left {written} rows, expected {rows}")
    finally:
        for topic in topics.values():
            _kafka.delete_topic(boot, topic)
    return rate


def rows(runs: list[dict[str, float]]) -> list[Row]:
    """Spark against the plain client, and the bridge without Spark against it, for reads and
    writes: each run is a pair (the same topic, back to back), so the ratio is the median of
    the runs' ratios, judged with any number of runs as this benchmark always was."""
    by_run = {kind: {n: run[kind] for n, run in enumerate(runs, 1) if kind in run}
              for kind in ("spark read", "plain read", "bridge read", "spark write", "plain write", "bridge write")}
    table = []
    for kind in ("read", "write"):
        table.append(paired_row(f"batch {kind}, spark vs plain client rows/s", by_run[f"spark {kind}"],
                                by_run[f"plain {kind}"], "rows/s", (">=", TARGET), min_pairs=1))
        table.append(paired_row(f"batch {kind}, bridge without Spark vs plain client rows/s", by_run[f"bridge {kind}"],
                                by_run[f"plain {kind}"], "rows/s"))
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="example:\n  .venv/bin/python bench/spark.py --records 200000 --repeat 3",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000, help="rows per phase (default 1,000,000)")
    parser.add_argument("--repeat", type=int, default=2, help="runs of every phase (default 2)")
    add_output_options(parser)
    args = parser.parse_args(argv)
    recording = Recording.start(__file__, __doc__, argv)
    rows_per_phase = args.records
    with tempfile.TemporaryDirectory(prefix="rafka-bench-spark-") as tmp, \
            _rafka.rafka_cluster(Path(tmp) / "rafka") as cluster:
        boot = cluster.bootstrap_servers
        spark = start_spark()
        runs: list[dict[str, float]] = []
        try:
            for run in range(args.repeat):
                runs.append(measure(spark, boot, rows_per_phase, run))
        finally:
            spark.stop()
    table = rows(runs)
    # Runs back to back on a shared machine differ a lot; the pairs of each run show by how much.
    text = [f"Spark bridge, {rows_per_phase:,} records of {RECORD_SIZE} B, {PARTITIONS} partitions, one rafka broker,"
            f" Spark local[2], {args.repeat} runs"]
    text += [f"  {kind} by run (spark/plain): " + ", ".join(
        f"{r[f'spark {kind}']:,.0f}/{r[f'plain {kind}']:,.0f} = {r[f'spark {kind}'] / r[f'plain {kind}']:.2f}"
        for r in runs) for kind in ("read", "write")]
    doc = {"settings": {"records": rows_per_phase, "record_size": RECORD_SIZE, "partitions": PARTITIONS,
                        "repeat": args.repeat, "spark_master": "local[2]"},
           "runs_rows_per_s": runs, "table": [row.to_json() for row in table]}
    finish(recording, args, table, doc, {}, "\n".join(text),
           ("metric", "measured", "plain client", "ratio", "target", "met?"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
