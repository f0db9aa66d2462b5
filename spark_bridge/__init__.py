"""rafka's Spark bridge: Kafka topics as DataFrames (batch and streaming, read and write)
through PySpark's Python Data Source API, and rafka hosted on Ray-on-Spark.

    from rafka.spark_bridge import register
    register(spark)                       # spark.read.format("rafka") ... as format("kafka")
    register(spark, kafka_alias=True)     # existing format("kafka") jobs run unchanged

Needs the `spark` extra: `pip install 'rafka[spark]'`.
"""
from __future__ import annotations

from typing import Any

__all__ = ["register", "start_cluster_on_spark", "ingest_dataframe", "ingest_parquet"]


def register(spark: Any, *, kafka_alias: bool = False) -> None:
    """Register the `rafka` data source with `spark`; with `kafka_alias`, also answer to
    `format("kafka")` in this session (Spark reserves that name, so it is mapped in PySpark)."""
    from rafka.spark_bridge import session_hooks
    from rafka.spark_bridge.source import RafkaDataSource

    spark.dataSource.register(RafkaDataSource)
    names = {"rafka": "rafka", "kafka": "rafka"} if kafka_alias else {"rafka": "rafka"}
    session_hooks.enable(spark, names)


def __getattr__(name: str) -> Any:
    # Ray-on-Spark helpers import ray and pyspark: only on first use.
    if name in ("start_cluster_on_spark", "ingest_dataframe", "ingest_parquet"):
        from rafka.spark_bridge import ray_on_spark

        return getattr(ray_on_spark, name)
    raise AttributeError(name)
