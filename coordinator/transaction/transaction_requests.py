"""What the transaction coordinator answers, request by request: Kafka 3.9's
`TransactionCoordinator` checks, in its order, as pure functions over `TransactionMetadata`.

Each function returns either an `ErrorCode` to answer at once (`ErrorCode.NONE` included:
nothing to write), or a `TxnTransitMetadata` that the caller appends to `__transaction_state`
(acks=all) and, once written, applies with `meta.complete_transition_to(transit)` before
answering; on a failed write it clears `meta.pending_state` and answers the write's error.
The callers are the I/O shell (the front end's transaction coordinator, not built yet).

- InitProducerId (`init_producer_id`): a transit to Empty with the next epoch (or a rotated
  producer id), or to PrepareEpochFence when a transaction is open: the caller then ends that
  transaction with ABORT as the coordinator (`end_transaction(..., from_client=False)` with the
  fenced epoch) and answers CONCURRENT_TRANSACTIONS, so the client retries and gets a fresh
  epoch once the abort completed.
- AddPartitionsToTxn and AddOffsetsToTxn (`add_partitions`; AddOffsetsToTxn adds the group's
  `__consumer_offsets` partition), and the KIP-890 verify-only form (`verify_partitions`).
- EndTxn (`end_transaction`): a transit to PrepareCommit/PrepareAbort; after it is written,
  `complete_after_prepare` gives the CompleteCommit/CompleteAbort transit to write once every
  partition has its marker (the client is answered NONE as soon as the prepare is written).
- The coordinator's own aborts of timed-out transactions (`abort_timed_out`).

Not safe for concurrent use: the coordinator serialises calls on its event loop.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.coordinator.transaction.transaction_metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    IllegalTransitionError,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
    is_epoch_exhausted,
    validate_transaction_timeout_ms,
)

S = TransactionState


@dataclass(frozen=True)
class ExpectedProducer:
    """The producer id and epoch a KIP-360 InitProducerId carries (its current ones)."""

    producer_id: int
    producer_epoch: int


def new_metadata(transactional_id: str, producer_id: int, txn_timeout_ms: int, now_ms: int) -> TransactionMetadata:
    """A transactional id seen for the first time: a new producer id, no epoch yet, Empty."""
    return TransactionMetadata(transactional_id, producer_id, NO_PRODUCER_EPOCH, txn_timeout_ms, now_ms,
                               last_producer_id=NO_PRODUCER_ID)


def check_init_request(transactional_id: str, txn_timeout_ms: int, max_timeout_ms: int) -> ErrorCode:
    """The checks before the metadata is looked up: an empty id is INVALID_REQUEST, a
    timeout over transaction.max.timeout.ms INVALID_TRANSACTION_TIMEOUT; NONE otherwise."""
    if transactional_id == "":
        return ErrorCode.INVALID_REQUEST
    if not validate_transaction_timeout_ms(txn_timeout_ms, max_timeout_ms):
        return ErrorCode.INVALID_TRANSACTION_TIMEOUT
    return ErrorCode.NONE


def init_producer_id(meta: TransactionMetadata, txn_timeout_ms: int, expected: ExpectedProducer | None,
                     next_producer_id: Callable[[], int], now_ms: int) -> ErrorCode | TxnTransitMetadata:
    """Kafka's `prepareInitProducerIdTransit`. `next_producer_id` is called only when the
    epoch of the current id is exhausted (a new id is rotated in)."""
    if meta.pending_transition_in_progress:
        return ErrorCode.CONCURRENT_TRANSACTIONS
    if expected is not None and not (
            meta.producer_epoch == NO_PRODUCER_EPOCH
            or expected.producer_id == meta.producer_id
            or (expected.producer_id == meta.last_producer_id and is_epoch_exhausted(expected.producer_epoch))):
        return ErrorCode.PRODUCER_FENCED
    state = meta.state
    if state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
        return ErrorCode.CONCURRENT_TRANSACTIONS
    if state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT, S.EMPTY):
        if meta.is_producer_epoch_exhausted and (expected is None or expected.producer_epoch == meta.producer_epoch):
            return meta.prepare_producer_id_rotation(next_producer_id(), txn_timeout_ms, now_ms,
                                                     record_last_epoch=expected is not None)
        return meta.prepare_increment_producer_epoch(
            txn_timeout_ms, None if expected is None else expected.producer_epoch, now_ms)
    if state is S.ONGOING:
        return meta.prepare_fence_producer_epoch()
    raise IllegalTransitionError(f"found transactional id {meta.transactional_id} in state {state.kafka_name}")


def _check_producer(meta: TransactionMetadata | None, producer_id: int, producer_epoch: int) -> ErrorCode:
    if meta is None or meta.producer_id != producer_id:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING
    if meta.producer_epoch != producer_epoch:
        return ErrorCode.PRODUCER_FENCED
    return ErrorCode.NONE


def add_partitions(meta: TransactionMetadata | None, producer_id: int, producer_epoch: int,
                   partitions: Iterable[TopicPartition], now_ms: int) -> ErrorCode | TxnTransitMetadata:
    """Kafka's `handleAddPartitionsToTransaction`: NONE at once when every partition is
    already in the open transaction."""
    error = _check_producer(meta, producer_id, producer_epoch)
    if error is not ErrorCode.NONE:
        return error
    if meta.pending_transition_in_progress or meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
        return ErrorCode.CONCURRENT_TRANSACTIONS
    added = frozenset(partitions)
    if meta.state is S.ONGOING and added <= meta.topic_partitions:
        return ErrorCode.NONE
    return meta.prepare_add_partitions(added, now_ms)


def verify_partitions(meta: TransactionMetadata | None, producer_id: int, producer_epoch: int,
                      partitions: Iterable[TopicPartition]) -> ErrorCode | dict[TopicPartition, ErrorCode]:
    """The verify-only AddPartitionsToTxn (KIP-890 part 1, v4 from a broker): each partition
    NONE when it is in the transaction, TRANSACTION_ABORTABLE when not. The pending state is
    not checked (Kafka's final check is the append itself)."""
    error = _check_producer(meta, producer_id, producer_epoch)
    if error is not ErrorCode.NONE:
        return error
    if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
        return ErrorCode.CONCURRENT_TRANSACTIONS
    return {tp: ErrorCode.NONE if tp in meta.topic_partitions else ErrorCode.TRANSACTION_ABORTABLE
            for tp in partitions}


def end_transaction(meta: TransactionMetadata | None, producer_id: int, producer_epoch: int, commit: bool,
                    now_ms: int, *, from_client: bool = True) -> ErrorCode | TxnTransitMetadata:
    """Kafka's `endTransaction` before the append. A client's epoch must equal the current
    one; the coordinator's own abort (after a fence, or a timeout) may carry a higher one, and
    then takes the fence's place: the metadata moves to that epoch with no last epoch.
    A retried EndTxn of a completed transaction is NONE; of one being completed,
    CONCURRENT_TRANSACTIONS; the other outcome, or no transaction, INVALID_TXN_STATE."""
    if meta is None or meta.producer_id != producer_id:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING
    if (from_client and producer_epoch != meta.producer_epoch) or producer_epoch < meta.producer_epoch:
        return ErrorCode.PRODUCER_FENCED
    if meta.pending_state is not None and meta.pending_state is not S.PREPARE_EPOCH_FENCE:
        return ErrorCode.CONCURRENT_TRANSACTIONS
    state = meta.state
    if state is S.ONGOING:
        if not commit and meta.pending_state is S.PREPARE_EPOCH_FENCE:
            meta.pending_state = None
            meta.producer_epoch = producer_epoch
            meta.last_producer_epoch = NO_PRODUCER_EPOCH
        return meta.prepare_abort_or_commit(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, now_ms)
    if state is S.COMPLETE_COMMIT:
        return ErrorCode.NONE if commit else ErrorCode.INVALID_TXN_STATE
    if state is S.COMPLETE_ABORT:
        return ErrorCode.NONE if not commit else ErrorCode.INVALID_TXN_STATE
    if state is S.PREPARE_COMMIT:
        return ErrorCode.CONCURRENT_TRANSACTIONS if commit else ErrorCode.INVALID_TXN_STATE
    if state is S.PREPARE_ABORT:
        return ErrorCode.CONCURRENT_TRANSACTIONS if not commit else ErrorCode.INVALID_TXN_STATE
    if state is S.EMPTY:
        return ErrorCode.INVALID_TXN_STATE
    raise IllegalTransitionError(f"found transactional id {meta.transactional_id} in state {state.kafka_name}")


def complete_after_prepare(meta: TransactionMetadata | None, producer_id: int, producer_epoch: int, commit: bool,
                           now_ms: int) -> ErrorCode | TxnTransitMetadata:
    """After PrepareCommit/PrepareAbort is written (and applied): the Complete* transit whose
    markers are now sent; its write follows the last marker. An error here (the id changed
    hands meanwhile) is answered to the client and no marker is sent. The caller checks first
    that its coordinator epoch is unchanged (NOT_COORDINATOR otherwise)."""
    error = _check_producer(meta, producer_id, producer_epoch)
    if error is not ErrorCode.NONE:
        return error
    if meta.pending_transition_in_progress:
        return ErrorCode.CONCURRENT_TRANSACTIONS
    if meta.state is S.PREPARE_COMMIT and commit or meta.state is S.PREPARE_ABORT and not commit:
        return meta.prepare_complete(now_ms)
    if meta.state in (S.DEAD, S.PREPARE_EPOCH_FENCE):
        raise IllegalTransitionError(f"found transactional id {meta.transactional_id} in state {meta.state.kafka_name}")
    return ErrorCode.INVALID_TXN_STATE


def abort_timed_out(meta: TransactionMetadata, now_ms: int) -> TxnTransitMetadata | None:
    """A transaction open past its timeout: the fence transit whose epoch the coordinator's
    abort then uses (`end_transaction(..., commit=False, from_client=False)`); None when it is
    not timed out or a transition is pending (Kafka skips it until the next round)."""
    if not meta.is_timed_out(now_ms):
        return None
    return meta.prepare_fence_producer_epoch()


def resume_after_load(meta: TransactionMetadata, now_ms: int) -> TxnTransitMetadata | None:
    """A transaction loaded in PrepareCommit/PrepareAbort (its coordinator moved or
    restarted between PREPARE and COMPLETE): the Complete* transit whose markers are sent
    again (Kafka's `loadTransactionsForTxnTopicPartition`); None for any other state."""
    if meta.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT) or meta.pending_transition_in_progress:
        return None
    return meta.prepare_complete(now_ms)


__all__ = [
    "ExpectedProducer", "abort_timed_out", "add_partitions", "check_init_request", "complete_after_prepare",
    "end_transaction", "init_producer_id", "new_metadata", "resume_after_load", "verify_partitions",
]
