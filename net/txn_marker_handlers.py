"""WriteTxnMarkers: a transaction coordinator's COMMIT and ABORT markers, written by the
partitions' leaders on this broker (Kafka's `KafkaApis.handleWriteTxnMarkersRequest`).

A transaction coordinator ends a transaction by sending each broker that leads one of its
partitions a WriteTxnMarkers request (Kafka's inter-broker API 27), and retries each
partition until it has its marker. Each partition's marker goes to its leader replica over the
data socket (`ReplicaChannel.write_txn_marker`), appended as Kafka appends it: origin
COORDINATOR, acks=all, within `request.timeout.ms` (30 s), internal topics allowed. The
replica refuses a stale producer epoch (INVALID_PRODUCER_EPOCH) or coordinator epoch
(TRANSACTION_COORDINATOR_FENCED), and answers a retried marker of a transaction it already
ended NONE. A partition this broker does not know is UNKNOWN_TOPIC_OR_PARTITION, one it does
not lead NOT_LEADER_OR_FOLLOWER; a leader still starting, or resting, is waited for within
half that time (then REQUEST_TIMED_OUT, and the coordinator retries).

A marker written to a `__consumer_offsets` partition also ends the transaction's offset
commits held by the group coordinator (Kafka's `onTransactionCompleted`): COMMIT makes them
visible, ABORT drops them. `write_marker` is the one path for both this API and the local
transaction coordinator's own markers.
"""
from __future__ import annotations

import asyncio

from typing import Any

from rafka.common.errors import ErrorCode
from rafka.common.types import OFFSETS_TOPIC, TopicPartition
from rafka.net.group_handlers import RequestContext
from rafka.net.protocol import apis
from rafka.net.routing import LeaderLookup, leader_channel, once_started
from rafka.partition_worker.messages import ProduceResult

WRITE_TXN_MARKERS = apis.WRITE_TXN_MARKERS.key
TXN_MARKER_APIS = (WRITE_TXN_MARKERS,)
# Kafka's request.timeout.ms (default 30 s), the time it gives a marker's append (acks=all).
MARKER_TIMEOUT_MS = 30_000


class TxnMarkerApis:
    def __init__(self, services: LeaderLookup, timeout_ms: int = MARKER_TIMEOUT_MS) -> None:
        self._services = services
        self._timeout_ms = timeout_ms

    def handlers(self) -> dict:
        return {WRITE_TXN_MARKERS: self.write_txn_markers}

    async def write_txn_markers(self, version: int, body: dict, context: RequestContext) -> dict:
        """Every marker's partitions at once; each partition answered with its own outcome."""
        answers, jobs = [], []
        for marker in body["markers"]:
            topics = []
            for topic in marker["topics"]:
                partitions = []
                for index in topic["partition_indexes"]:
                    entry = {"partition_index": index, "error_code": ErrorCode.NONE}
                    partitions.append(entry)
                    jobs.append((entry, self._write(marker, topic["name"], index)))
                topics.append({"name": topic["name"], "partitions": partitions})
            answers.append({"producer_id": marker["producer_id"], "topics": topics})
        for (entry, _), result in zip(jobs, await asyncio.gather(*[job for _, job in jobs])):
            entry["error_code"] = result.error
        return {"markers": answers}

    async def _write(self, marker: dict, topic: str, partition: int) -> ProduceResult:
        return await write_marker(self._services, marker["producer_id"], marker["producer_epoch"],
                                  marker["coordinator_epoch"], marker["transaction_result"], topic, partition,
                                  self._timeout_ms)


async def write_marker(services: LeaderLookup, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                       commit: bool, topic: str, partition: int, timeout_ms: int) -> ProduceResult:
    """One partition's marker by its leader here (a starting one waited for within half the
    timeout); on `__consumer_offsets`, the group coordinator then ends the transaction's commits."""
    err, channel = leader_channel(services, topic, partition)
    if err is ErrorCode.NOT_LEADER_OR_FOLLOWER:
        deadline = asyncio.get_running_loop().time() + timeout_ms / 2000
        err, channel = await once_started(services, topic, partition, deadline)
    if channel is None:
        return ProduceResult(err)
    result = await channel.write_txn_marker(producer_id, producer_epoch, coordinator_epoch, commit, timeout_ms)
    if result.error is ErrorCode.NONE:
        verifier: Any = getattr(services, "verifier", None)
        if verifier is not None:   # (its next transaction here is verified again, KIP-890)
            verifier.forget(TopicPartition(topic, partition), producer_id)
    if result.error is ErrorCode.NONE and topic == OFFSETS_TOPIC:
        groups: Any = getattr(services, "groups", None)
        if groups is not None:
            groups.complete_txn_offsets(partition, producer_id, commit)
    return result
