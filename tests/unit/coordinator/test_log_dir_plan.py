"""DescribeLogDirs and AlterReplicaLogDirs decisions: Kafka 3.9's answers, in its order."""
from __future__ import annotations

import pytest

from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.coordinator.broker import log_dir_plan as plan
from rafka.partition_worker.log_dir_moves import DirKind, PartitionDir, PartitionDirEntry

A, B = "/data/a", "/data/b"
T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)
ID = "f" * 32


def check(tp=T0, destination=B, *, offline_dirs=(), offline=(), running=(T0,), known=True):
    return plan.check_move(tp, destination, log_dirs={A, B}, offline_dirs=set(offline_dirs),
                           offline_replicas=set(offline), running=set(running), known=known)


@pytest.mark.parametrize("kwargs, expected", [
    ({}, ErrorCode.NONE),
    ({"tp": TopicPartition("x" * 249, 0)}, ErrorCode.INVALID_TOPIC_EXCEPTION),
    ({"destination": "/data/c"}, ErrorCode.LOG_DIR_NOT_FOUND),
    ({"destination": "data/b"}, ErrorCode.LOG_DIR_NOT_FOUND),            # not the absolute path
    ({"destination": "/data/c", "offline": (T0,)}, ErrorCode.LOG_DIR_NOT_FOUND),   # the dir is checked first
    ({"offline_dirs": (B,)}, ErrorCode.KAFKA_STORAGE_ERROR),
    ({"offline": (T0,), "running": ()}, ErrorCode.KAFKA_STORAGE_ERROR),
    ({"running": ()}, ErrorCode.REPLICA_NOT_AVAILABLE),
    ({"running": (), "known": False}, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
], ids=["ok", "name-too-long", "unknown-dir", "relative-dir", "dir-before-replica", "offline-dir",
        "offline-replica", "no-replica-here", "unknown-partition"])
def test_check_move_answers_as_kafka(kwargs, expected):
    assert check(**kwargs) == expected
    assert plan.error_message(expected, T0, B)


def test_absolute_log_dirs():
    assert plan.absolute_log_dirs(["/x/y", "rel"])[0] == "/x/y"
    assert plan.absolute_log_dirs(["rel"])[0].startswith("/")


def entry(tp, kind=DirKind.CURRENT, size=10):
    return PartitionDirEntry(PartitionDir(tp, kind, "" if kind is DirKind.CURRENT else ID), size)


SCANNED = [plan.ScannedLogDir(A, (entry(T0, size=100), entry(T1, size=7), entry(U0, DirKind.DELETE)), 1000, 400),
           plan.ScannedLogDir(B, (entry(T0, DirKind.FUTURE, 60), entry(U0, size=3)), 2000, 900)]


def test_describe_every_log_with_sizes_lags_and_the_future_log():
    out = plan.describe(SCANNED, None, offline_dirs=set(), offline_replicas={T1}, future_lags={T0: 42})
    assert [(d.path, d.error, d.total_bytes, d.usable_bytes) for d in out] == [
        (A, ErrorCode.NONE, 1000, 400), (B, ErrorCode.NONE, 2000, 900)]
    assert out[0].replicas == (plan.LogDirReplica(T0, 100, 0, False), plan.LogDirReplica(T1, 7, -1, False))
    assert out[1].replicas == (plan.LogDirReplica(T0, 60, 42, True), plan.LogDirReplica(U0, 3, 0, False))


def test_describe_asked_partitions_keeps_other_topics_listed_empty_as_kafka():
    out = plan.describe(SCANNED, {T1}, offline_dirs=set(), offline_replicas=set(), future_lags={})
    assert {t: [r.tp for r in rs] for t, rs in plan.by_topic(out[0].replicas).items()} == {"t": [T1]}
    assert {t: [r.tp for r in rs] for t, rs in plan.by_topic(out[1].replicas).items()} == {"t": [], "u": []}


def test_describe_an_offline_or_unreadable_dir_reports_only_its_error():
    scanned = SCANNED + [plan.ScannedLogDir("/data/c", error=ErrorCode.KAFKA_STORAGE_ERROR)]
    out = plan.describe(scanned, None, offline_dirs={A}, offline_replicas=set(), future_lags={})
    assert [(d.path, d.error, d.replicas, d.total_bytes) for d in out if d.path != B] == [
        (A, ErrorCode.KAFKA_STORAGE_ERROR, (), -1), ("/data/c", ErrorCode.KAFKA_STORAGE_ERROR, (), -1)]
