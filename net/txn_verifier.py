"""KIP-890 part 1 at a partition leader: before a transactional batch is appended, the
producer's transaction coordinator confirms that the partition is in its ongoing transaction
(`transaction.partition.verification.enable`, default true). A coordinator on this broker is
asked directly; another broker's with a verify-only AddPartitionsToTxn (v4), as Kafka's
`AddPartitionsToTxnManager` asks it.

The answers are mapped as Kafka 3.9's `AddPartitionsToTxnManager` and `ReplicaManager` map
them for a produce: a partition not in the transaction (TRANSACTION_ABORTABLE from the
coordinator) is INVALID_TXN_STATE; PRODUCER_FENCED is INVALID_PRODUCER_EPOCH; a coordinator
that cannot answer now (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS, or unreachable) is
NOT_ENOUGH_REPLICAS, which producers retry.

A confirmed (partition, producer id, epoch) is remembered until a marker for that producer is
written to the partition here (`forget`) or the partition's leadership leaves this broker
(`keep_only`), so only a producer's first batch of a transaction at a partition is asked
about, as Kafka asks only for a batch that would open a transaction there.

Not yet (see `txn_produce.py`): Kafka's verification guard at the replica, so a marker landing
between the answer and the append is not caught.
"""
from __future__ import annotations

import logging
from typing import Any

from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.coordinator.transaction.transaction_log import TRANSACTION_STATE_TOPIC
from rafka.net.broker_requests import BrokerRequests, BrokerUnreachable
from rafka.net.txn_handlers import ADD_PARTITIONS_TO_TXN
from rafka.net.txn_produce import TransactionalWrite

log = logging.getLogger(__name__)

VERIFY_VERSION = 4
VERIFY_TIMEOUT_S = 10.0
_RETRIABLE = (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
              ErrorCode.CONCURRENT_TRANSACTIONS)


def produce_error(code: ErrorCode) -> ErrorCode:
    """What a produce's partition is answered for the coordinator's verdict `code`."""
    if code is ErrorCode.TRANSACTION_ABORTABLE:
        return ErrorCode.INVALID_TXN_STATE
    if code is ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if code in _RETRIABLE:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return code


class CoordinatorVerifier:
    """`TransactionVerifier` that asks the transactional id's coordinator."""

    def __init__(self, services: Any) -> None:
        self._services = services
        self._brokers = BrokerRequests(f"txn-verifier-{services.broker_id}")
        self._verified: set[tuple[TopicPartition, int, int]] = set()   # (partition, producer id, epoch)

    def forget(self, tp: TopicPartition, producer_id: int) -> None:
        """A marker of `producer_id` is written to `tp`: its next transaction there is asked about."""
        if self._verified:
            self._verified = {v for v in self._verified if not (v[0] == tp and v[1] == producer_id)}

    def keep_only(self, led: object) -> None:
        """Forget the partitions not in `led` (those whose leadership left this broker)."""
        if self._verified:
            self._verified = {v for v in self._verified if v[0] in led}

    async def verify(self, transactional_id: str, writes: list[TransactionalWrite]) -> dict[TopicPartition, ErrorCode]:
        results: dict[TopicPartition, ErrorCode] = {}
        by_producer: dict[tuple[int, int], list[TopicPartition]] = {}
        for write in writes:
            if (write.tp, write.producer_id, write.producer_epoch) in self._verified:
                results[write.tp] = ErrorCode.NONE
            else:
                by_producer.setdefault((write.producer_id, write.producer_epoch), []).append(write.tp)
        for (producer_id, epoch), tps in by_producer.items():
            verdict = await self._ask(transactional_id, producer_id, epoch, tps)
            for tp in tps:
                code = produce_error(verdict.get(tp, ErrorCode.NONE) if isinstance(verdict, dict) else verdict)
                results[tp] = code
                if code is ErrorCode.NONE:
                    self._verified.add((tp, producer_id, epoch))
        return results

    async def verify_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             group_partition: TopicPartition) -> ErrorCode:
        """TxnOffsetCommit's check (Kafka's `handleTxnCommitOffsets`): the group's offsets
        partition must be in the transaction (AddOffsetsToTxn); the answer for the commit."""
        verdict = await self._ask(transactional_id, producer_id, producer_epoch, [group_partition])
        code = verdict.get(group_partition, ErrorCode.NONE) if isinstance(verdict, dict) else verdict
        if code is ErrorCode.TRANSACTION_ABORTABLE:
            return ErrorCode.INVALID_TXN_STATE
        if code is ErrorCode.PRODUCER_FENCED:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        return code

    async def _ask(self, txn_id: str, producer_id: int, epoch: int,
                   tps: list[TopicPartition]) -> ErrorCode | dict[TopicPartition, ErrorCode]:
        services = self._services
        index = services.txns.partition_for(txn_id)
        info = services.metadata.partition(TRANSACTION_STATE_TOPIC, index)
        if info is None or info.leader < 0:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if info.leader == services.broker_id:
            return services.txns.verify_partitions(txn_id, producer_id, epoch, tps)
        topics: dict[str, list[int]] = {}
        for tp in tps:
            topics.setdefault(tp.topic, []).append(tp.partition)
        body = {"transactions": [{"transactional_id": txn_id, "producer_id": producer_id, "producer_epoch": epoch,
                                  "verify_only": True,
                                  "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}]}
        try:
            answer = await self._brokers.request(services.metadata, info.leader, ADD_PARTITIONS_TO_TXN,
                                                 VERIFY_VERSION, body, VERIFY_TIMEOUT_S)
        except BrokerUnreachable as e:
            log.warning("[CoordinatorVerifier broker=%d] could not verify %s: %s", services.broker_id, txn_id, e)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if answer.get("error_code", 0):
            return ErrorCode(answer["error_code"])
        verdict: dict[TopicPartition, ErrorCode] = {}
        for txn in answer["results_by_transaction"]:
            for topic in txn["topic_results"]:
                for p in topic["results_by_partition"]:
                    verdict[TopicPartition(topic["name"], p["partition_index"])] = ErrorCode(p["partition_error_code"])
        return verdict

    def close(self) -> None:
        self._brokers.close()
