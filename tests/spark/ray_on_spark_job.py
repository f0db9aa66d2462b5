"""The Ray-on-Spark scenario, run by test_ray_on_spark.py as its own process inside a
loopback-only network namespace: a 2-executor local Spark cluster, Ray on it, rafka on
Ray, a DataFrame ingested by Ray tasks on the Spark workers into a topic that did not exist
before (auto-created by the ingestion, which waits for it) and read back through the
data source. Prints one JSON line with what it saw; everything it starts, it stops.

    python tests/spark/ray_on_spark_job.py WORK_DIR

The environment carries Ray's token authentication (RAY_AUTH_MODE=token,
RAY_AUTH_TOKEN_PATH), PATH with the virtualenv's bin first, PYSPARK_PYTHON and
SPARK_LOCAL_IP; the executors get the same through spark.executorEnv.*. WORK_DIR must be
a short path: Ray's socket paths below it are limited to 107 bytes."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROWS = 20_000
PROGRESS = "[ray-on-spark scenario]"


def main(work: Path) -> dict:
    from pyspark.sql import SparkSession

    from rafka.common.config import BrokerConfig
    from rafka.spark_bridge import ingest_dataframe, register, start_cluster_on_spark
    from rafka.spark_bridge.murmur2 import partition_for_key

    names = ("PATH", "PYSPARK_PYTHON", "SPARK_LOCAL_IP", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH",
             "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "RAY_USAGE_STATS_ENABLED")
    env = {name: os.environ[name] for name in names}
    builder = (SparkSession.builder.master("local-cluster[2,2,2048]").appName("rafka-on-ray-on-spark")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.enabled", "false").config("spark.driver.memory", "1g")
               .config("spark.executor.memory", "1g"))
    for name, value in env.items():
        builder = builder.config(f"spark.executorEnv.{name}", value)
    phases: dict[str, float] = {}
    mark = time.monotonic()

    def phase(name: str) -> None:
        """Record `name` as done; say so on stderr, so a scenario that hangs shows where."""
        nonlocal mark
        phases[name] = round(time.monotonic() - mark, 1)
        mark = time.monotonic()
        print(f"{PROGRESS} {time.strftime('%H:%M:%S')} {name} done in {phases[name]} s", file=sys.stderr, flush=True)

    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    phase("spark")
    handle = None
    try:
        handle = start_cluster_on_spark(
            spark, brokers=1, data_dir=work / "rafka", config=BrokerConfig.from_mapping({"num.partitions": "4"}),
            max_worker_nodes=2, min_worker_nodes=2,
            num_cpus_worker_node=1, memory_worker_node=512 << 20, object_store_memory_worker_node=128 << 20,
            memory_head_node=1 << 30, object_store_memory_head_node=128 << 20, ray_temp_root_dir=str(work))
        phase("ray_and_rafka")
        boot = handle.bootstrap_servers
        # No topic made beforehand: the ingestion tasks' first Metadata requests create it (4
        # partitions, num.partitions) and each task waits for it as Kafka's producer would.
        df = spark.range(ROWS, numPartitions=4).selectExpr("cast(id AS string) AS key",
                                                             "concat('value-', cast(id AS string)) AS value")
        report = ingest_dataframe(df, "ingested", boot, staging_dir=work / "staging")
        phase("ingest")
        back = (spark.read.format("rafka").option("kafka.bootstrap.servers", boot).option("subscribe", "ingested")
                .load().selectExpr("cast(key AS string) AS key", "cast(value AS string) AS value", "partition")
                .collect())
        phase("read_back")
        head = __import__("ray").get_runtime_context().get_node_id()
        return {
            "ingested_rows": report.rows, "tasks": report.tasks, "task_nodes": list(report.node_ids),
            "head_node": head, "read_rows": len(back),
            "exact": sorted((r.key, r.value) for r in back) == sorted((str(i), f"value-{i}") for i in range(ROWS)),
            "partitions_by_murmur2": all(r.partition == partition_for_key(r.key.encode(), 4) for r in back),
            "phases_s": phases,
        }
    finally:
        if handle is not None:
            handle.shutdown()
        spark.stop()
        phase("shutdown")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for tests.*
    outcome = main(Path(sys.argv[1]))
    print(json.dumps({"netns": os.readlink("/proc/self/ns/net"), **outcome}), flush=True)
