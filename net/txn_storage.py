"""The transaction coordinator's I/O at a front end (`TransactionStorage`): its
`__transaction_state` partitions through their local leader replicas, and the markers it
sends to every partition's leader: a local one over the data socket (`write_marker`), another
broker's as a WriteTxnMarkers request (Kafka's inter-broker API 27), one request per broker.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, AsyncIterator

from rafka.common.errors import ErrorCode
from rafka.common.logging_util import Prefixed
from rafka.common.types import TopicPartition
from rafka.coordinator.transaction.transaction_log import TRANSACTION_STATE_TOPIC
from rafka.net.broker_requests import BrokerRequests, BrokerUnreachable
from rafka.net.routing import STARTING_WAIT_MS
from rafka.net.txn_marker_handlers import WRITE_TXN_MARKERS, write_marker
from rafka.net.internal_log_read import read_to_log_end

log = logging.getLogger(__name__)

WRITE_TXN_MARKERS_VERSION = 1


class TxnStorage:
    """`TransactionStorage` over a front end's services (metadata, local leaders' channels)."""

    def __init__(self, services: Any, write_timeout_ms: int) -> None:
        self._services = services
        self._timeout_ms = write_timeout_ms
        self._log = Prefixed(log, f"[TxnStorage broker={services.broker_id}]")
        self._brokers = BrokerRequests(f"txn-coordinator-{services.broker_id}")

    async def _channel(self, partition: int, wait_s: float | None) -> Any:
        tp = TopicPartition(TRANSACTION_STATE_TOPIC, partition)
        services = self._services
        return services.channel(tp) or await services.starting.wait(tp, services.channel, wait_s)

    async def append_txn_log(self, partition: int, batch: bytes) -> ErrorCode:
        channel = await self._channel(partition, STARTING_WAIT_MS / 1000)
        if channel is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        try:
            return (await channel.append(batch, -1, self._timeout_ms, wake_wait_ms=self._timeout_ms)).error
        except Exception as e:  # noqa: BLE001 - the replica is gone
            self._log.warning("appending to %s-%d failed: %r", TRANSACTION_STATE_TOPIC, partition, e)
            return ErrorCode.NOT_LEADER_OR_FOLLOWER

    async def read_txn_log(self, partition: int) -> AsyncIterator[bytes]:
        """To the log end, as the group coordinator's load (see `Frontend.read`)."""
        channel = await self._channel(partition, None)
        if channel is None:
            raise RuntimeError(f"{TRANSACTION_STATE_TOPIC}-{partition} is not led here")
        async for data in read_to_log_end(channel, f"{TRANSACTION_STATE_TOPIC}-{partition}"):
            yield data

    async def write_markers(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                            partitions: frozenset[TopicPartition], timeout_ms: int) -> dict[TopicPartition, ErrorCode]:
        metadata = self._services.metadata
        by_broker: dict[int, list[TopicPartition]] = {}
        results: dict[TopicPartition, ErrorCode] = {}
        for tp in partitions:
            info = metadata.partition(tp.topic, tp.partition)
            if info is None:
                known = tp.topic in metadata.topics
                results[tp] = ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif self._services.channel(tp) is not None or info.leader == self._services.broker_id:
                by_broker.setdefault(self._services.broker_id, []).append(tp)
            elif info.leader < 0:
                results[tp] = ErrorCode.NOT_LEADER_OR_FOLLOWER
            else:
                by_broker.setdefault(info.leader, []).append(tp)
        jobs = []
        for broker_id, tps in by_broker.items():
            if broker_id == self._services.broker_id:
                jobs += [self._local(producer_id, producer_epoch, coordinator_epoch, commit, tp, timeout_ms)
                         for tp in tps]
            else:
                jobs.append(self._remote(broker_id, producer_id, producer_epoch, coordinator_epoch, commit, tps,
                                         timeout_ms))
        for answer in await asyncio.gather(*jobs):
            results.update(answer)
        return results

    async def _local(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                     tp: TopicPartition, timeout_ms: int) -> dict[TopicPartition, ErrorCode]:
        try:
            result = await write_marker(self._services, producer_id, producer_epoch, coordinator_epoch, commit,
                                        tp.topic, tp.partition, timeout_ms)
            return {tp: result.error}
        except Exception as e:  # noqa: BLE001 - the replica is gone: tried again
            self._log.warning("writing a marker to %s failed: %r", tp, e)
            return {tp: ErrorCode.NOT_LEADER_OR_FOLLOWER}

    async def _remote(self, broker_id: int, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                      commit: bool, tps: list[TopicPartition], timeout_ms: int) -> dict[TopicPartition, ErrorCode]:
        failed = {tp: ErrorCode.NOT_LEADER_OR_FOLLOWER for tp in tps}
        topics: dict[str, list[int]] = {}
        for tp in tps:
            topics.setdefault(tp.topic, []).append(tp.partition)
        body = {"markers": [{"producer_id": producer_id, "producer_epoch": producer_epoch,
                             "transaction_result": commit, "coordinator_epoch": coordinator_epoch,
                             "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]}]}
        try:
            answer = await self._brokers.request(self._services.metadata, broker_id, WRITE_TXN_MARKERS,
                                                 WRITE_TXN_MARKERS_VERSION, body, timeout_ms / 1000 + 5)
        except BrokerUnreachable as e:
            self._log.warning("WriteTxnMarkers to broker %d failed: %s", broker_id, e)
            return failed
        results = dict(failed)
        for marker in answer["markers"]:
            for topic in marker["topics"]:
                for p in topic["partitions"]:
                    results[TopicPartition(topic["name"], p["partition_index"])] = ErrorCode(p["error_code"])
        return results

    def close(self) -> None:
        self._brokers.close()
