"""DescribeLogDirs and AlterReplicaLogDirs (KIP-113), as kafka-log-dirs.sh,
kafka-reassign-partitions.sh (its `log_dirs`), the admin clients and `rafka log-dirs` use them.

Both are about this broker only, so the front end hands them to its broker's coordinator
(`coordinator/broker/log_dir_mover.py`), which lists its log dirs and moves its replicas. An
AlterReplicaLogDirs answer only says whether a move started: the move goes on in the
background and DescribeLogDirs shows its future log until it is done (Kafka's way). A
partition named twice is answered once, for its last destination (Kafka builds a map).
"""
from __future__ import annotations

from typing import Any, Protocol

from rafka.common.errors import ErrorCode, KafkaError
from rafka.common.types import TopicPartition
from rafka.coordinator.broker.log_dir_plan import LogDirDescription, by_topic
from rafka.net.group_handlers import RequestContext
from rafka.net.protocol import apis

ALTER_REPLICA_LOG_DIRS, DESCRIBE_LOG_DIRS = apis.ALTER_REPLICA_LOG_DIRS.key, apis.DESCRIBE_LOG_DIRS.key
LOG_DIR_APIS = (ALTER_REPLICA_LOG_DIRS, DESCRIBE_LOG_DIRS)


class LogDirServices(Protocol):
    """The broker's coordinator as these handlers see it; both raise a KafkaError when the call fails."""

    async def describe_log_dirs(self, partitions: set[TopicPartition] | None) -> list[LogDirDescription]: ...

    async def alter_replica_log_dirs(self, moves: dict[TopicPartition, str]) -> dict[TopicPartition, ErrorCode]: ...


class LogDirApis:
    def __init__(self, services: LogDirServices) -> None:
        self._services = services

    def handlers(self) -> dict:
        return {DESCRIBE_LOG_DIRS: self.describe_log_dirs, ALTER_REPLICA_LOG_DIRS: self.alter_replica_log_dirs}

    async def describe_log_dirs(self, version: int, body: dict, context: RequestContext) -> dict:
        topics = body.get("topics")
        wanted = None if topics is None else {TopicPartition(t["topic"], p) for t in topics for p in t["partitions"]}
        try:
            results = await self._services.describe_log_dirs(wanted)
        except KafkaError as e:   # the broker's coordinator failed or timed out
            return {"throttle_time_ms": 0, "error_code": e.code, "results": []}
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results": [_result(r) for r in results]}

    async def alter_replica_log_dirs(self, version: int, body: dict, context: RequestContext) -> dict:
        moves: dict[TopicPartition, str] = {}
        for d in body["dirs"]:
            for t in d["topics"]:
                for p in t["partitions"]:
                    moves.pop(TopicPartition(t["name"], p), None)   # the last one counts, in its place
                    moves[TopicPartition(t["name"], p)] = d["path"]
        try:
            outcome = await self._services.alter_replica_log_dirs(moves) if moves else {}
        except KafkaError as e:
            outcome = {tp: e.code for tp in moves}
        results: dict[str, list[dict]] = {}
        for tp in moves:
            results.setdefault(tp.topic, []).append({"partition_index": tp.partition, "error_code": outcome[tp]})
        return {"throttle_time_ms": 0, "results": [{"topic_name": topic, "partitions": partitions}
                                                   for topic, partitions in results.items()]}


def _result(r: LogDirDescription) -> dict[str, Any]:
    return {"error_code": r.error, "log_dir": r.path, "total_bytes": r.total_bytes, "usable_bytes": r.usable_bytes,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": p.tp.partition, "partition_size": p.size_bytes, "offset_lag": p.offset_lag,
                 "is_future_key": p.is_future} for p in partitions]}
                for topic, partitions in by_topic(r.replicas).items()]}
