"""rafka hosted by a Spark application: Ray-on-Spark, rafka's brokers on it, and ingestion
of DataFrames from Ray tasks on the Spark workers.

    handle = start_cluster_on_spark(spark, brokers=1, max_worker_nodes=2)
    ingest_dataframe(df, "events", handle.bootstrap_servers, staging_dir="/shared/staging")
    spark.read.format("rafka").option("kafka.bootstrap.servers", handle.bootstrap_servers) ...
    handle.shutdown()

The brokers (and so ZooKeeper, their logs and replicas) live on the Ray head node, which
Ray-on-Spark starts on the Spark driver's machine; the Ray worker nodes on the executors
run the ingestion tasks. Ray's own requirements apply: `ray` on the PATH of driver and
executors, and, on a shared machine, Ray's token authentication.
"""
from __future__ import annotations

import logging
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from rafka.actors import ray_env

log = logging.getLogger(__name__)

# Ray-on-Spark defaults for a small cluster: no dashboard, the head node (on the driver)
# runs only what asks for no CPU (rafka's actors), the workers run the tasks.
_SETUP_DEFAULTS: dict[str, Any] = {"max_worker_nodes": 2, "num_cpus_head_node": 0, "num_gpus_worker_node": 0,
                                   "head_node_options": {"include_dashboard": False}}


@dataclass
class SparkHostedCluster:
    """A rafka cluster on Ray-on-Spark; `shutdown()` stops rafka, then Ray's cluster."""

    bootstrap_servers: str
    ray_address: str
    cluster: Any  # rafka.cluster.Cluster
    _stopped: bool = field(default=False, repr=False)

    def shutdown(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        try:
            self.cluster.stop()
        finally:
            from ray.util.spark import shutdown_ray_cluster

            ray_env.ray.shutdown()
            shutdown_ray_cluster()

    def __enter__(self) -> "SparkHostedCluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def await_executors(spark: Any, timeout_s: float = 120.0) -> int:
    """Wait until the executors a `local-cluster[N,...]` master asks for have registered.

    Ray-on-Spark sizes its worker nodes from the executors registered when it starts, and a
    fresh local cluster's executors register one by one after the session is up (0.6 s apart
    on an idle 2-core machine, far longer under load): started too early it fails with "no
    resources to launch Ray worker nodes". Other masters are not waited for. Returns how many
    executors are registered; after `timeout_s`, setup_ray_cluster says what is missing."""
    match = re.match(r"local-cluster\[(\d+),", spark.sparkContext.master)
    status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus   # the driver counts as one
    if match is None:
        return status().size() - 1
    wanted, deadline = int(match.group(1)), time.monotonic() + timeout_s
    while (registered := status().size() - 1) < wanted and time.monotonic() < deadline:
        time.sleep(0.2)
    return registered


def start_cluster_on_spark(spark: Any, brokers: int = 1, *, data_dir: str | Path | None = None,
                           config: Any = None, **setup_options: Any) -> SparkHostedCluster:
    """Start Ray on `spark`'s cluster (`ray.util.spark.setup_ray_cluster`, which uses the
    active SparkSession, with `setup_options` over small-cluster defaults) and `brokers`
    rafka brokers on it. Everything started is stopped again if a step fails."""
    ray_env.use_private_ray_environment()   # a Ray rafka starts: its processes inherit rafka's settings
    from ray.util.spark import setup_ray_cluster, shutdown_ray_cluster

    from rafka.cluster import Cluster

    log.info("starting Ray on Spark (%s), then %d rafka broker(s)", spark.sparkContext.master, brokers)
    await_executors(spark)
    address, _ = setup_ray_cluster(**{**_SETUP_DEFAULTS, **setup_options})
    cluster = Cluster(data_dir or tempfile.mkdtemp(prefix="rafka-on-spark-"), brokers=brokers, first_port=0,
                      config=config, ray_address=address)
    try:
        cluster.start()
    except BaseException:
        ray_env.ray.shutdown()
        shutdown_ray_cluster()
        raise
    log.info("rafka on Ray-on-Spark (%s) serving at %s", address, cluster.bootstrap_servers)
    return SparkHostedCluster(cluster.bootstrap_servers, address, cluster)


@dataclass(frozen=True)
class IngestReport:
    rows: int
    tasks: int
    node_ids: tuple[str, ...]  # the Ray nodes the ingestion tasks ran on


def ingest_dataframe(df: Any, topic: str, bootstrap_servers: str, *, staging_dir: str | Path,
                     tasks: int | None = None, kafka_options: Mapping[str, str] | None = None) -> IngestReport:
    """Write `df` (columns as a Kafka write takes them: value, key, partition, headers) into
    `topic` from Ray tasks, never through the driver: Spark's executors write it as Parquet
    to `staging_dir` (a path every node sees), Ray tasks produce the files, the staging
    files go. One task per Ray worker CPU unless `tasks` says otherwise. `kafka_options`
    are `kafka.`-prefixed client settings, as the data source takes them."""
    staging = Path(staging_dir) / f"ingest-{topic}"
    df.write.mode("overwrite").parquet(str(staging))
    try:
        files = sorted(str(p) for p in staging.glob("*.parquet"))
        return ingest_parquet(files, topic, bootstrap_servers, tasks=tasks, kafka_options=kafka_options)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def ingest_parquet(paths: Sequence[str], topic: str, bootstrap_servers: str, *, tasks: int | None = None,
                   kafka_options: Mapping[str, str] | None = None) -> IngestReport:
    """Produce the rows of Parquet files into `topic` from Ray tasks (one CPU each), each
    task a share of the files; fails with the first task's Kafka error. Each task waits for
    the topic's metadata as Kafka's producer does (`kafka.max.block.ms`, 60 s by default),
    so a topic the first write auto-creates is written, not refused."""
    ray = ray_env.ray
    if not paths:
        return IngestReport(0, 0, ())
    count = max(1, min(len(paths), tasks or int(ray.cluster_resources().get("CPU", 1))))
    shares = [list(paths[i::count]) for i in range(count)]
    client = dict(kafka_options or {})
    results = ray.get([_produce_files.remote(share, topic, bootstrap_servers, client) for share in shares])
    return IngestReport(sum(rows for rows, _ in results), count, tuple(sorted({node for _, node in results})))


def _produce_files_impl(paths: list[str], topic: str, bootstrap_servers: str,
                        client: dict[str, str]) -> tuple[int, str]:
    import pyarrow.parquet as pq

    from rafka.spark_bridge.client_settings import max_block_ms, strip_prefix, to_librdkafka
    from rafka.spark_bridge.produce import RowWriter, arrow_sink_columns

    java = strip_prefix(client)
    settings = to_librdkafka(java)
    writer = None
    try:
        for path in paths:
            parquet = pq.ParquetFile(path)
            if writer is None:
                columns = arrow_sink_columns(parquet.schema_arrow, topic)
                writer = RowWriter(bootstrap_servers, settings, columns, topic, max_block_ms=max_block_ms(java))
            for batch in parquet.iter_batches(batch_size=10_000):
                writer.write(batch)
    except BaseException:
        if writer is not None:
            writer.abandon()
        raise
    return (writer.close() if writer is not None else 0), ray_env.current_node_id()


_produce_files = ray_env.ray.remote(num_cpus=1, max_retries=0)(_produce_files_impl)
