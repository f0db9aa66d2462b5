"""The facade's pure parts: Kafka error codes to exceptions, the cluster's record, a lazy `import rafka`."""
from __future__ import annotations

import os
import subprocess
import sys

from rafka.common.config import BrokerConfig
from rafka.common.errors import (ErrorCode, KafkaError, NonEmptyGroupError, TopicAlreadyExistsError,
                                 UnknownTopicOrPartitionError, error_for)
from rafka.facade.registry import BrokerEntry, ClusterRecord


def test_error_for_gives_the_class_of_kafkas_name_where_there_is_one() -> None:
    assert type(error_for(ErrorCode.TOPIC_ALREADY_EXISTS)) is TopicAlreadyExistsError
    assert type(error_for(3, "orders")) is UnknownTopicOrPartitionError
    assert str(error_for(3, "orders")) == "orders"
    assert type(error_for(ErrorCode.NON_EMPTY_GROUP)) is NonEmptyGroupError


def test_error_for_a_code_without_a_class_is_a_kafka_error_with_that_code() -> None:
    error = error_for(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    assert type(error) is KafkaError and error.code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert str(error) == "COORDINATOR_NOT_AVAILABLE"


def test_cluster_record_adds_replaces_and_drops_brokers_in_id_order() -> None:
    record = ClusterRecord("rafka", "/tmp/x", True, BrokerConfig(zookeeper_connect="127.0.0.1:2181"), 0,
                           "127.0.0.1", False, 2)
    record = record.with_broker(BrokerEntry(1, "127.0.0.1", 9093, "n")).with_broker(BrokerEntry(0, "127.0.0.1", 9092, "n"))
    assert record.bootstrap_servers == "127.0.0.1:9092,127.0.0.1:9093"
    record = record.with_broker(BrokerEntry(1, "127.0.0.1", 9095, "n", "r1"))
    assert [b.port for b in record.brokers] == [9092, 9095]
    assert record.without_broker(0).bootstrap_servers == "127.0.0.1:9095"
    assert record.zookeeper_connect == "127.0.0.1:2181"


def test_import_rafka_imports_no_ray_and_changes_no_environment() -> None:
    code = ("import os, sys; before = dict(os.environ); import rafka; assert 'ray' not in sys.modules; "
            "assert rafka.Cluster.__name__ == 'Cluster' and rafka.Admin.__name__ == 'Admin'; "
            "assert 'ray' not in sys.modules; assert dict(os.environ) == before; print('ok')")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
