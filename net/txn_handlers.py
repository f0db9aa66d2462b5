"""Kafka's transaction APIs on a front end (KIP-98, KIP-447, KIP-890 part 1): InitProducerId,
AddPartitionsToTxn (v0-3 from clients; v4, batched and verify-only, from brokers),
AddOffsetsToTxn, EndTxn and TxnOffsetCommit, and where FindCoordinator finds a transactional
id's coordinator.

Each handler turns the request into calls on the broker's `TransactionCoordinator` (or, for
TxnOffsetCommit, its `GroupCoordinator`) and the answers back into the response's fields,
mapping error codes for old versions as Kafka's `KafkaApis` does (PRODUCER_FENCED is
INVALID_PRODUCER_EPOCH before the version that knows it).
"""
from __future__ import annotations

import logging
from typing import Awaitable, Callable, Protocol

from rafka.common.errors import ErrorCode
from rafka.common.metadata import ClusterMetadata
from rafka.common.types import OFFSETS_TOPIC, TopicPartition
from rafka.coordinator.group.group_coordinator import GroupCoordinator
from rafka.coordinator.group.group_messages import CommittedOffset
from rafka.coordinator.transaction.transaction_coordinator import TransactionCoordinator
from rafka.coordinator.transaction.transaction_requests import ExpectedProducer
from rafka.net.group_handlers import RequestContext
from rafka.net.protocol import apis

log = logging.getLogger(__name__)

INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT = (
    apis.INIT_PRODUCER_ID.key, apis.ADD_PARTITIONS_TO_TXN.key, apis.ADD_OFFSETS_TO_TXN.key, apis.END_TXN.key,
    apis.TXN_OFFSET_COMMIT.key)
TXN_APIS = (INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT)

# The first version of each API whose clients know PRODUCER_FENCED (older ones get INVALID_PRODUCER_EPOCH).
_PRODUCER_FENCED_SINCE = {INIT_PRODUCER_ID: 4, ADD_PARTITIONS_TO_TXN: 2, ADD_OFFSETS_TO_TXN: 2, END_TXN: 2,
                          TXN_OFFSET_COMMIT: 2}


class TxnServices(Protocol):
    broker_id: int
    metadata: ClusterMetadata
    groups: GroupCoordinator
    txns: TransactionCoordinator

    async def init_producer_id(self, producer_id: int, producer_epoch: int) -> tuple[ErrorCode, int, int]:
        """(error, producer id, epoch) for a producer without a transactional id."""


def _for_version(api_key: int, version: int, code: ErrorCode) -> ErrorCode:
    if code is ErrorCode.PRODUCER_FENCED and version < _PRODUCER_FENCED_SINCE[api_key]:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


OffsetsVerifier = Callable[[str, int, int, TopicPartition], Awaitable[ErrorCode]]


class TxnApis:
    def __init__(self, services: TxnServices, verify_offsets: OffsetsVerifier | None = None) -> None:
        """`verify_offsets` (KIP-890, None when verification is off) checks that a
        TxnOffsetCommit's group partition is in the producer's transaction."""
        self._services = services
        self._verify_offsets = verify_offsets

    def handlers(self) -> dict:
        return {INIT_PRODUCER_ID: self.init_producer_id, ADD_PARTITIONS_TO_TXN: self.add_partitions_to_txn,
                ADD_OFFSETS_TO_TXN: self.add_offsets_to_txn, END_TXN: self.end_txn,
                TXN_OFFSET_COMMIT: self.txn_offset_commit}

    # -- InitProducerId ------------------------------------------------------------------
    async def init_producer_id(self, version: int, body: dict, context: RequestContext) -> dict:
        """An idempotent producer's id comes from this broker; a transactional one's from the
        id's coordinator (KIP-360: the current id and epoch, v3+, ask for a bump)."""
        producer_id, producer_epoch = body.get("producer_id", -1), body.get("producer_epoch", -1)
        txn_id = body.get("transactional_id")
        if txn_id is None:
            code, producer_id, epoch = await self._services.init_producer_id(producer_id, producer_epoch)
        else:
            if (producer_id == -1) != (producer_epoch == -1):
                code, producer_id, epoch = ErrorCode.INVALID_REQUEST, -1, -1
            else:
                expected = None if producer_id == -1 else ExpectedProducer(producer_id, producer_epoch)
                code, producer_id, epoch = await self._services.txns.init_producer_id(
                    txn_id, body["transaction_timeout_ms"], expected)
        return {"throttle_time_ms": 0, "error_code": _for_version(INIT_PRODUCER_ID, version, code),
                "producer_id": producer_id, "producer_epoch": epoch}

    # -- AddPartitionsToTxn --------------------------------------------------------------
    async def add_partitions_to_txn(self, version: int, body: dict, context: RequestContext) -> dict:
        if version < 4:
            results = await self._add_one(version, body["v3_and_below_transactional_id"],
                                          body["v3_and_below_producer_id"], body["v3_and_below_producer_epoch"],
                                          body["v3_and_below_topics"], verify_only=False)
            return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": results}
        answers = []
        for txn in body["transactions"]:
            results = await self._add_one(version, txn["transactional_id"], txn["producer_id"], txn["producer_epoch"],
                                          txn["topics"], verify_only=txn.get("verify_only", False))
            answers.append({"transactional_id": txn["transactional_id"], "topic_results": results})
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results_by_transaction": answers}

    async def _add_one(self, version: int, txn_id: str, producer_id: int, producer_epoch: int, topics: list[dict],
                       *, verify_only: bool) -> list[dict]:
        """One transaction's partitions, each with its error (Kafka's order: unknown topics
        first, the others then OPERATION_NOT_ATTEMPTED; otherwise the coordinator's answer)."""
        partitions = [TopicPartition(t["name"], p) for t in topics for p in t["partitions"]]
        known = self._services.metadata.topics
        unknown = {tp for tp in partitions
                   if tp.topic not in known or tp.partition not in known[tp.topic].partitions}
        codes: dict[TopicPartition, ErrorCode]
        if unknown and not verify_only:
            codes = {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED
                     for tp in partitions}
        elif verify_only:
            answer = self._services.txns.verify_partitions(txn_id, producer_id, producer_epoch, partitions)
            codes = answer if isinstance(answer, dict) else {tp: answer for tp in partitions}
        else:
            code = await self._services.txns.add_partitions(txn_id, producer_id, producer_epoch, partitions)
            codes = {tp: _for_version(ADD_PARTITIONS_TO_TXN, version, code) for tp in partitions}
        by_topic: dict[str, list[dict]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append({"partition_index": tp.partition,
                                                      "partition_error_code": codes[tp]})
        return [{"name": name, "results_by_partition": results} for name, results in by_topic.items()]

    # -- AddOffsetsToTxn, EndTxn ---------------------------------------------------------
    async def add_offsets_to_txn(self, version: int, body: dict, context: RequestContext) -> dict:
        """The group's `__consumer_offsets` partition joins the transaction."""
        group_id = body["group_id"]
        if not group_id:
            code = ErrorCode.INVALID_GROUP_ID
        else:
            tp = TopicPartition(OFFSETS_TOPIC, self._services.groups.partition_for(group_id))
            code = await self._services.txns.add_partitions(body["transactional_id"], body["producer_id"],
                                                            body["producer_epoch"], [tp])
        return {"throttle_time_ms": 0, "error_code": _for_version(ADD_OFFSETS_TO_TXN, version, code)}

    async def end_txn(self, version: int, body: dict, context: RequestContext) -> dict:
        code = await self._services.txns.end_transaction(body["transactional_id"], body["producer_id"],
                                                         body["producer_epoch"], body["committed"])
        return {"throttle_time_ms": 0, "error_code": _for_version(END_TXN, version, code)}

    # -- TxnOffsetCommit -------------------------------------------------------------------
    async def txn_offset_commit(self, version: int, body: dict, context: RequestContext) -> dict:
        """Offsets committed in the producer's transaction: held by the group coordinator until
        the transaction ends (unknown topics answered UNKNOWN_TOPIC_OR_PARTITION first)."""
        known = self._services.metadata.topics
        offsets: dict[tuple[str, int], CommittedOffset] = {}
        codes: dict[tuple[str, int], ErrorCode] = {}
        for topic in body["topics"]:
            for p in topic["partitions"]:
                key = (topic["name"], p["partition_index"])
                if topic["name"] not in known:
                    codes[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    offsets[key] = CommittedOffset(offset=p["committed_offset"],
                                                   leader_epoch=p.get("committed_leader_epoch", -1),
                                                   metadata=p.get("committed_metadata") or "")
        owner = self._services.groups.check(body["group_id"]) if offsets else ErrorCode.NONE
        if owner is not ErrorCode.NONE:   # (Kafka's order: the group's coordinator first, then the transaction)
            codes.update({key: owner for key in offsets})
            offsets = {}
        if offsets and self._verify_offsets is not None:
            group_tp = TopicPartition(OFFSETS_TOPIC, self._services.groups.partition_for(body["group_id"]))
            refused = await self._verify_offsets(body["transactional_id"], body["producer_id"],
                                                 body["producer_epoch"], group_tp)
            if refused is not ErrorCode.NONE:
                codes.update({key: refused for key in offsets})
                offsets = {}
        if offsets:
            codes.update(await self._services.groups.commit_txn_offsets(
                body["group_id"], body["producer_id"], body["producer_epoch"], body.get("member_id", ""),
                body.get("generation_id", -1), body.get("group_instance_id"), offsets))
        topics: dict[str, list[dict]] = {}
        for (name, partition), code in codes.items():
            topics.setdefault(name, []).append({"partition_index": partition,
                                                "error_code": _for_version(TXN_OFFSET_COMMIT, version, code)})
        return {"throttle_time_ms": 0, "topics": [{"name": n, "partitions": ps} for n, ps in topics.items()]}
