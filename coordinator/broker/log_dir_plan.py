"""DescribeLogDirs and AlterReplicaLogDirs, their decisions (pure: no Ray, no files).

`check_move` answers one partition of an AlterReplicaLogDirs request as Kafka 3.9's
`ReplicaManager.alterReplicaLogDirs` does, in its order: a future dir name over 255 bytes
(KAFKA-4893) is INVALID_TOPIC_EXCEPTION; a destination not among the broker's log.dirs (its
absolute path, exactly) LOG_DIR_NOT_FOUND; an offline destination, or a replica that is
offline here, KAFKA_STORAGE_ERROR; a partition without a running replica here
REPLICA_NOT_AVAILABLE when the cluster knows it (Kafka keeps "REPLICA_NOT_AVAILABLE for
compatibility" where the replica manager says NOT_LEADER_OR_FOLLOWER) and
UNKNOWN_TOPIC_OR_PARTITION when it does not.

`describe` builds DescribeLogDirs' answer from each log dir's listing, as Kafka's
`ReplicaManager.describeLogDirs`: per log dir its error, path and volume space, and per
topic the partitions asked for (all of the dir's logs when the request names none) with
size, offset lag (0 for a current log, which is never behind its own high watermark; the
current log end minus the future's for a future log; -1 when not known, as for a replica
that is offline) and whether it is the future log. As Kafka, a topic with a log in the dir is
listed even when none of its partitions was asked for (with no partitions).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import AbstractSet, Iterable, Mapping

from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.partition_worker.log_dir_moves import MAX_DIR_NAME, DirKind, PartitionDirEntry, future_dir

INVALID_OFFSET_LAG = -1   # Kafka's DescribeLogDirsResponse.INVALID_OFFSET_LAG
UNKNOWN_SPACE = -1        # TotalBytes / UsableBytes when the volume could not be asked


@dataclass(frozen=True)
class LogDirReplica:
    """One log (current or future) of a log dir, as DescribeLogDirs reports it."""

    tp: TopicPartition
    size_bytes: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True)
class LogDirDescription:
    """One log dir of the broker, as DescribeLogDirs reports it."""

    path: str
    error: ErrorCode
    replicas: tuple[LogDirReplica, ...] = ()
    total_bytes: int = UNKNOWN_SPACE
    usable_bytes: int = UNKNOWN_SPACE


@dataclass(frozen=True)
class ScannedLogDir:
    """What a log dir held when listed (`entries`), or why it could not be (`error`)."""

    path: str
    entries: tuple[PartitionDirEntry, ...] = ()
    total_bytes: int = UNKNOWN_SPACE
    usable_bytes: int = UNKNOWN_SPACE
    error: ErrorCode = ErrorCode.NONE


def absolute_log_dirs(log_dirs: Iterable[str]) -> tuple[str, ...]:
    """The configured log.dirs as the APIs name them: absolute paths (Kafka's getAbsolutePath)."""
    return tuple(os.path.abspath(d) for d in log_dirs)


def check_move(tp: TopicPartition, destination: str, *, log_dirs: AbstractSet[str], offline_dirs: AbstractSet[str],
               offline_replicas: AbstractSet[TopicPartition], running: AbstractSet[TopicPartition],
               known: bool) -> ErrorCode:
    """The answer to moving this broker's replica of `tp` to `destination` (NONE: go ahead).
    `running`: the partitions whose replica runs here; `known`: the cluster's metadata has `tp`."""
    if len(future_dir(tp, "0" * 32).name.encode()) > MAX_DIR_NAME:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    if destination not in log_dirs:
        return ErrorCode.LOG_DIR_NOT_FOUND
    if destination in offline_dirs or tp in offline_replicas:
        return ErrorCode.KAFKA_STORAGE_ERROR
    if tp not in running:
        return ErrorCode.REPLICA_NOT_AVAILABLE if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.NONE


def error_message(code: ErrorCode, tp: TopicPartition, destination: str) -> str:
    """Kafka's message for a refused move, for the broker's log."""
    return {
        ErrorCode.INVALID_TOPIC_EXCEPTION: "The topic name is too long.",
        ErrorCode.LOG_DIR_NOT_FOUND: f"Log dir {destination} is not found in the config.",
        ErrorCode.KAFKA_STORAGE_ERROR: f"Log directory {destination} or partition {tp} is offline",
        ErrorCode.REPLICA_NOT_AVAILABLE: f"Replica of {tp} is not available on this broker",
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    }.get(code, code.name)


def describe(scanned: Iterable[ScannedLogDir], wanted: AbstractSet[TopicPartition] | None, *,
             offline_dirs: AbstractSet[str], offline_replicas: AbstractSet[TopicPartition],
             future_lags: Mapping[TopicPartition, int]) -> list[LogDirDescription]:
    """DescribeLogDirs' results; `wanted` None: every log of every dir."""
    out = []
    for d in scanned:
        if d.path in offline_dirs:
            out.append(LogDirDescription(d.path, ErrorCode.KAFKA_STORAGE_ERROR))
            continue
        if d.error is not ErrorCode.NONE:
            out.append(LogDirDescription(d.path, d.error))
            continue
        replicas = []
        for e in d.entries:
            if e.dir.kind is DirKind.DELETE:
                continue
            future = e.dir.kind is DirKind.FUTURE
            if future:
                lag = future_lags.get(e.dir.tp, INVALID_OFFSET_LAG)
            else:
                lag = INVALID_OFFSET_LAG if e.dir.tp in offline_replicas else 0
            replicas.append(LogDirReplica(e.dir.tp, e.size_bytes, lag, future))
        if wanted is not None:
            topics = {r.tp.topic for r in replicas}
            replicas = [r for r in replicas if r.tp in wanted]
            # Kafka lists every topic of the dir, with only the partitions asked for: keep an
            # empty entry per topic left without any (see `by_topic`).
            replicas += [LogDirReplica(TopicPartition(t, -1), 0, 0, False)
                         for t in sorted(topics - {r.tp.topic for r in replicas})]
        out.append(LogDirDescription(d.path, ErrorCode.NONE, tuple(sorted(replicas, key=_order)),
                                     d.total_bytes, d.usable_bytes))
    return out


def by_topic(replicas: Iterable[LogDirReplica]) -> dict[str, list[LogDirReplica]]:
    """Replicas grouped by topic, in order; a topic listed without partitions (`describe`'s
    placeholder, partition -1) gets an empty list."""
    topics: dict[str, list[LogDirReplica]] = {}
    for r in replicas:
        partitions = topics.setdefault(r.tp.topic, [])
        if r.tp.partition >= 0:
            partitions.append(r)
    return topics


def _order(r: LogDirReplica) -> tuple:
    return r.tp.topic, r.tp.partition, r.is_future
