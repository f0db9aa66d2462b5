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

Not yet: the group coordinator's side for `__consumer_offsets` (Kafka's
`onTransactionCompleted`, making a transaction's offset commits visible) comes with
TxnOffsetCommit.
"""
from __future__ import annotations

import asyncio

from rafka.common.errors import ErrorCode
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
        err, channel = leader_channel(self._services, topic, partition)
        if err is ErrorCode.NOT_LEADER_OR_FOLLOWER:
            deadline = asyncio.get_running_loop().time() + self._timeout_ms / 2000
            err, channel = await once_started(self._services, topic, partition, deadline)
        if channel is None:
            return ProduceResult(err)
        return await channel.write_txn_marker(marker["producer_id"], marker["producer_epoch"],
                                              marker["coordinator_epoch"], marker["transaction_result"],
                                              self._timeout_ms)
