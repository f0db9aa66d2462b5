"""`Launcher`: what the replica reconciler asks of the side that runs replicas.

The reconciler decides; a launcher does each step for one partition (`RayReplicaLauncher`
with Ray actors; the reconciler's unit tests with a fake): start a replica and wait until it
serves, hand it a LeaderAndIsr order, learn of its death, close, stop or delete it, and
serve a replica dormant from its closed log.
"""
from __future__ import annotations

import uuid
from typing import Any, Callable, Protocol

from rafka.common.config import LogConfig
from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.partition_worker.broker_checkpoints import PartitionCheckpoint
from rafka.partition_worker.closed_log import ClosedLog
from rafka.partition_worker.replica_state import LeaderAndIsr


class Launcher(Protocol):
    async def start(self, tp: TopicPartition, topic_id: uuid.UUID | None, config: LogConfig,
                    place: Callable[[TopicPartition, str], PartitionCheckpoint]) -> Any: ...

    async def become(self, replica: Any, order: LeaderAndIsr) -> ErrorCode: ...

    async def died(self, replica: Any) -> bool: ...

    async def delete(self, tp: TopicPartition, replica: Any | None) -> None: ...

    async def stop(self, tp: TopicPartition, replica: Any) -> Any: ...

    async def close(self, replica: Any) -> Any: ...

    def kill(self, replica: Any) -> None: ...

    def release(self, replica: Any, wanted: bool = False) -> None: ...

    async def open_dormant(self, tp: TopicPartition, topic_id: uuid.UUID | None, role: LeaderAndIsr,
                           place: Callable[[TopicPartition, str], PartitionCheckpoint]) -> ClosedLog | None: ...

    async def reopen_dormant(self, replica: Any, status: Any,
                             place: Callable[[TopicPartition, str], PartitionCheckpoint]) -> ClosedLog | None: ...

    async def take_role_dormant(self, closed: ClosedLog, role: LeaderAndIsr) -> ClosedLog: ...

