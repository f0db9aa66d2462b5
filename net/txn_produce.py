"""Transactional produce at the front end (KIP-98), and the seam for KIP-890 part 1.

Kafka 3.9's order (`KafkaApis.handleProduceRequest`, `ReplicaManager.appendRecords`):

1. A request holding a transactional batch must name a transactional id the client may
   write: otherwise every partition of it is answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED
   (`refusal`). rafka has no ACLs, so any transactional id may write.
2. With `transaction.partition.verification.enable` (default true), the leader asks the
   transaction coordinator (AddPartitionsToTxn, verify only) whether each partition whose
   transactional batch would open a transaction there was added to the producer's ongoing
   transaction; a partition it does not confirm is answered INVALID_TXN_STATE, and while the
   coordinator cannot answer (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
   COORDINATOR_LOAD_IN_PROGRESS) the partition gets NOT_ENOUGH_REPLICAS, which producers retry.
3. The replica appends the batch: it opens the producer's transaction there (producer state),
   or continues it.

Step 2 is `TransactionVerifier.verify`: the front end uses `txn_verifier.CoordinatorVerifier`,
which asks the transactional id's coordinator, or `NO_VERIFICATION` (every partition
confirmed) when verification is disabled. The replica half is still to come: Kafka's
`VerificationGuard`, made by the log before the coordinator is asked, cleared by a marker of
that producer, and required by the append of a transactional batch that opens a transaction,
so that a marker landing between the answer and the append makes the append fail rather than
open a hanging transaction. In rafka that is a data-channel op that starts a verification at
the replica and returns its guard, and an APPEND that carries it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Protocol

from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.partition_worker.segment_reader import transactional_producer


@dataclass(frozen=True)
class TransactionalWrite:
    """A produce request's transactional batch for one partition: whose transaction it writes."""

    tp: TopicPartition
    producer_id: int
    producer_epoch: int


def transactional_writes(partitions: Iterable[tuple[str, int, object]]) -> list[TransactionalWrite]:
    """The transactional batches among a produce request's (topic, partition, records)."""
    writes = []
    for topic, partition, records in partitions:
        producer = transactional_producer(records) if records else None
        if producer is not None:
            writes.append(TransactionalWrite(TopicPartition(topic, partition), *producer))
    return writes


def refusal(transactional_id: str | None, writes: list[TransactionalWrite]) -> ErrorCode | None:
    """The error every partition of the request gets before anything is written: a
    transactional batch without a transactional id is TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    None when the request may go on."""
    if writes and transactional_id is None:
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    return None


class TransactionVerifier(Protocol):
    async def verify(self, transactional_id: str, writes: list[TransactionalWrite]) -> dict[TopicPartition, ErrorCode]:
        """Each write's partition: NONE when it is in `transactional_id`'s ongoing transaction
        (its batch may be appended), else the error its partition is answered with."""


class _NoVerification:
    """Confirms every partition: `transaction.partition.verification.enable=false`."""

    async def verify(self, transactional_id: str, writes: list[TransactionalWrite]) -> dict[TopicPartition, ErrorCode]:
        return {write.tp: ErrorCode.NONE for write in writes}


NO_VERIFICATION: TransactionVerifier = _NoVerification()
