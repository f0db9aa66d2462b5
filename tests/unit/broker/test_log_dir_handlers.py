"""DescribeLogDirs (API 35) and AlterReplicaLogDirs (API 34) through the dispatcher with
encoded frames, every version Kafka 3.9 serves, over a stand-in for the broker's coordinator."""
from __future__ import annotations

import asyncio

import pytest

from rafka.common.errors import ErrorCode
from rafka.common.metadata import ClusterMetadata
from rafka.common.types import TopicPartition
from rafka.coordinator.broker.log_dir_plan import LogDirDescription, LogDirReplica
from rafka.net.frontend_actor import CoordinatorCallError
from rafka.net.handlers import RequestDispatcher
from rafka.net.log_dir_handlers import ALTER_REPLICA_LOG_DIRS, DESCRIBE_LOG_DIRS
from rafka.net.protocol import apis, codec

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


class Services:
    broker_id = 1
    auto_create_topics = False
    metadata = ClusterMetadata()

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.asked: list = []

    async def describe_log_dirs(self, partitions):
        self.asked.append(partitions)
        if self.fail:
            raise CoordinatorCallError("describe_log_dirs timed out", ErrorCode.REQUEST_TIMED_OUT)
        return [LogDirDescription("/a", ErrorCode.NONE, (LogDirReplica(T0, 100, 0, False),
                                                         LogDirReplica(T1, 50, 3, True)), 1000, 300),
                LogDirDescription("/b", ErrorCode.KAFKA_STORAGE_ERROR)]

    async def alter_replica_log_dirs(self, moves):
        self.asked.append(moves)
        if self.fail:
            raise CoordinatorCallError("alter_replica_log_dirs failed")
        return {tp: ErrorCode.NONE if d == "/a" else ErrorCode.LOG_DIR_NOT_FOUND for tp, d in moves.items()}


def ask(services: Services, api: int, version: int, body: dict) -> dict:
    frame = codec.encode_request(api, version, 7, "test", body)
    parts = asyncio.run(RequestDispatcher(services).handle(memoryview(frame)[4:], "127.0.0.1:5555"))
    return codec.decode_response(api, version, b"".join(bytes(p) for p in parts))[1]


def test_both_apis_are_advertised_with_kafka_39s_ranges():
    ranges = RequestDispatcher(Services()).advertised
    assert ranges[DESCRIBE_LOG_DIRS] == (0, 4) and ranges[ALTER_REPLICA_LOG_DIRS] == (0, 2)


@pytest.mark.parametrize("version", range(apis.DESCRIBE_LOG_DIRS.versions[0], apis.DESCRIBE_LOG_DIRS.versions[1] + 1))
def test_describe_log_dirs_every_version(version):
    services = Services()
    body = ask(services, DESCRIBE_LOG_DIRS, version, {"topics": None})
    assert services.asked == [None]
    a, b = body["results"]
    assert (a["log_dir"], a["error_code"], b["log_dir"], b["error_code"]) == ("/a", 0, "/b", 56)
    assert a["topics"] == [{"name": "t", "partitions": [
        {"partition_index": 0, "partition_size": 100, "offset_lag": 0, "is_future_key": False},
        {"partition_index": 1, "partition_size": 50, "offset_lag": 3, "is_future_key": True}]}]
    if version >= 4:
        assert (a["total_bytes"], a["usable_bytes"]) == (1000, 300)


def test_describe_log_dirs_of_named_partitions_and_a_failed_coordinator():
    services = Services()
    ask(services, DESCRIBE_LOG_DIRS, 1, {"topics": [{"topic": "t", "partitions": [1]}]})
    assert services.asked == [{T1}]
    body = ask(Services(fail=True), DESCRIBE_LOG_DIRS, 3, {"topics": None})
    assert (body["error_code"], body["results"]) == (ErrorCode.REQUEST_TIMED_OUT, [])


@pytest.mark.parametrize("version", range(apis.ALTER_REPLICA_LOG_DIRS.versions[0],
                                          apis.ALTER_REPLICA_LOG_DIRS.versions[1] + 1))
def test_alter_replica_log_dirs_answers_per_partition_and_the_last_destination_counts(version):
    services = Services()
    body = ask(services, ALTER_REPLICA_LOG_DIRS, version, {"dirs": [
        {"path": "/b", "topics": [{"name": "t", "partitions": [0, 1]}]},
        {"path": "/a", "topics": [{"name": "t", "partitions": [1]}]}]})
    assert services.asked == [{T0: "/b", T1: "/a"}]
    assert body["results"] == [{"topic_name": "t", "partitions": [
        {"partition_index": 0, "error_code": ErrorCode.LOG_DIR_NOT_FOUND},
        {"partition_index": 1, "error_code": ErrorCode.NONE}]}]


def test_alter_replica_log_dirs_with_a_failed_coordinator_answers_its_error_per_partition():
    body = ask(Services(fail=True), ALTER_REPLICA_LOG_DIRS, 2, {"dirs": [
        {"path": "/a", "topics": [{"name": "t", "partitions": [0]}]}]})
    assert body["results"][0]["partitions"] == [{"partition_index": 0, "error_code": ErrorCode.UNKNOWN_SERVER_ERROR}]
