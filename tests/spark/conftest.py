"""Spark tier: one local SparkSession for the session, against the session's real rafka
(`rafka_cluster` in tests/conftest.py), and topics each test creates and deletes."""
from __future__ import annotations

import os
import sys
import uuid
from typing import Callable, Iterator

import pytest

from tests.spark.clients import create_topic
from tests.topics import delete_topics

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# Executors run the data source in Python workers: the interpreter of this virtualenv.
os.environ["PYSPARK_PYTHON"] = sys.executable


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """A local Spark (2 cores) on loopback, with the rafka data source registered (and
    answering to format("kafka"), as a session that opts in)."""
    from pyspark.sql import SparkSession

    from rafka.spark_bridge import register

    session = (SparkSession.builder.master("local[2]").appName("rafka-spark-tests")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.streaming.stopTimeout", "30s").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    register(session, kafka_alias=True)
    yield session
    session.stop()


@pytest.fixture
def new_topic(bootstrap: str) -> Iterator[Callable[..., str]]:
    """`new_topic(partitions, **configs)` creates a uniquely named topic; all go at the end."""
    created: list[str] = []

    def make(partitions: int = 4, prefix: str = "spark", **configs: str) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        create_topic(bootstrap, name, partitions, configs)
        created.append(name)
        return name

    yield make
    delete_topics(bootstrap, created)
