"""The state of one transactional id at its coordinator (KIP-98): the pure state machine.

Mirrors Apache Kafka 3.9's `TransactionMetadata`, `TxnTransitMetadata` and `TransactionState`
(core, `kafka.coordinator.transaction`). Every change goes in two steps, as Kafka's does:

    transit = meta.prepare_add_partitions(partitions, now_ms)   # sets the pending state
    write transit to __transaction_state (acks=all) ...
    meta.complete_transition_to(transit)                        # only after the write succeeded
    # or, when the write failed: meta.pending_state = None

While a state is pending, a second `prepare_*` raises `IllegalTransitionError`; the coordinator
answers CONCURRENT_TRANSACTIONS before it gets there (Kafka's handlers check
`pendingTransitionInProgress` first). `IllegalTransitionError` is a bug (Kafka's
IllegalStateException), never an answer to a client; the one expected refusal,
PRODUCER_FENCED from `prepare_increment_producer_epoch`, is returned as an `ErrorCode`.

States and their ids (the int8 `TransactionStatus` of `__transaction_state` values, and the
names DescribeTransactions shows):

    0 Empty  1 Ongoing  2 PrepareCommit  3 PrepareAbort  4 CompleteCommit  5 CompleteAbort
    6 Dead  7 PrepareEpochFence

Epochs: the coordinator never hands out epoch 32767 (Short.MAX_VALUE), so it can always fence
a producer by one more bump; a producer id whose epoch reached 32766 is exhausted and is
rotated to a new id (KIP-360). `last_producer_id`/`last_producer_epoch` let a retried
InitProducerId (KIP-360: the client sends its current id and epoch) get the same answer again.

Not safe for concurrent use: the coordinator serialises calls on its event loop.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_TIMESTAMP = -1
SHORT_MAX = 32767


class IllegalTransitionError(Exception):
    """A transition the state machine forbids: a coordinator bug, not a client error."""


class TransactionState(IntEnum):
    """Kafka's `TransactionState` objects; the value is the id stored in the log."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """"PrepareCommit" and so on: the name DescribeTransactions and ListTransactions use."""
        return _NAMES[self]

    @classmethod
    def from_name(cls, name: str) -> TransactionState | None:
        """The state Kafka calls `name` (ListTransactions' state filters), None if none."""
        return _BY_NAME.get(name)

    @property
    def valid_previous_states(self) -> frozenset[TransactionState]:
        return _VALID_PREVIOUS[self]

    @property
    def is_expiration_allowed(self) -> bool:
        """A transactional id idle in this state may expire (transactional.id.expiration.ms)."""
        return self in (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT,
                        TransactionState.COMPLETE_ABORT)


_S = TransactionState
_NAMES = {_S.EMPTY: "Empty", _S.ONGOING: "Ongoing", _S.PREPARE_COMMIT: "PrepareCommit",
          _S.PREPARE_ABORT: "PrepareAbort", _S.COMPLETE_COMMIT: "CompleteCommit",
          _S.COMPLETE_ABORT: "CompleteAbort", _S.DEAD: "Dead",
          _S.PREPARE_EPOCH_FENCE: "PrepareEpochFence"}
_BY_NAME = {name: state for state, name in _NAMES.items()}
_VALID_PREVIOUS = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE}),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_ABORT, _S.COMPLETE_COMMIT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """Kafka's `isEpochExhausted`: the epoch may not grow further (>= Short.MAX_VALUE - 1)."""
    return producer_epoch >= SHORT_MAX - 1


@dataclass(frozen=True)
class TxnTransitMetadata:
    """The target of one transition: what is written to `__transaction_state` and, once that
    write succeeded, applied by `complete_transition_to`. `last_producer_id` is the id before
    the transition (Kafka's transit carries it so a rotated id can be recognised on retry)."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    txn_state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp_ms: int
    txn_last_update_timestamp_ms: int


class TransactionMetadata:
    """One transactional id: its producer id and epoch, the open transaction's partitions and
    times, the current state and the pending one. Kafka's field names in snake case.

    `txn_start_timestamp_ms` is when the first partition of the current transaction was added
    (-1 when none is open); `txn_last_update_timestamp_ms` moves with every completed
    transition and drives transactional id expiry.
    """

    def __init__(self, transactional_id: str, producer_id: int, producer_epoch: int,
                 txn_timeout_ms: int, timestamp_ms: int, *,
                 last_producer_id: int = NO_PRODUCER_ID, last_producer_epoch: int = NO_PRODUCER_EPOCH,
                 state: TransactionState = TransactionState.EMPTY,
                 topic_partitions: set[TopicPartition] | None = None,
                 txn_start_timestamp_ms: int | None = None) -> None:
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.last_producer_id = last_producer_id
        self.producer_epoch = producer_epoch
        self.last_producer_epoch = last_producer_epoch
        self.txn_timeout_ms = txn_timeout_ms
        self.state = state
        self.topic_partitions: set[TopicPartition] = set(topic_partitions or ())
        self.txn_start_timestamp_ms = timestamp_ms if txn_start_timestamp_ms is None else txn_start_timestamp_ms
        self.txn_last_update_timestamp_ms = timestamp_ms
        # The state a transition under way will reach; None when none is under way.
        self.pending_state: TransactionState | None = None
        # A fence whose write failed: the next fence reuses the bumped epoch rather than
        # bumping again (that epoch was never given to a client).
        self.has_failed_epoch_fence = False

    def __repr__(self) -> str:
        return (f"TransactionMetadata(transactional_id={self.transactional_id!r}, "
                f"producer_id={self.producer_id}, producer_epoch={self.producer_epoch}, "
                f"txn_timeout_ms={self.txn_timeout_ms}, state={self.state.kafka_name}, "
                f"pending_state={self.pending_state and self.pending_state.kafka_name}, "
                f"topic_partitions={sorted(self.topic_partitions)}, "
                f"txn_start_timestamp_ms={self.txn_start_timestamp_ms}, "
                f"txn_last_update_timestamp_ms={self.txn_last_update_timestamp_ms})")

    # -- queries -----------------------------------------------------------------------------
    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def has_pending_transaction(self) -> bool:
        """A transaction is open or ending (Ongoing, PrepareAbort, PrepareCommit)."""
        return self.state in (TransactionState.ONGOING, TransactionState.PREPARE_ABORT,
                              TransactionState.PREPARE_COMMIT)

    def is_timed_out(self, now_ms: int) -> bool:
        """An open transaction the coordinator should abort (TransactionStateManager's
        `timedOutTransactions`): Ongoing, nothing pending, started more than its timeout ago."""
        return (self.state is TransactionState.ONGOING and self.pending_state is None
                and self.txn_start_timestamp_ms + self.txn_timeout_ms < now_ms)

    def is_expired(self, now_ms: int, expiration_ms: int) -> bool:
        """The id may be removed (transactional.id.expiration.ms): idle that long in a state
        that allows it, with nothing pending (TransactionStateManager's expiry scan)."""
        return (self.state.is_expiration_allowed and self.pending_state is None
                and self.txn_last_update_timestamp_ms + expiration_ms <= now_ms)

    def snapshot(self) -> TxnTransitMetadata:
        """The current state as a transit, with no pending state set (Kafka's
        `prepareNoTransit`): what a reload or a DescribeTransactions shows."""
        return TxnTransitMetadata(self.producer_id, self.last_producer_id, self.producer_epoch,
                                  self.last_producer_epoch, self.txn_timeout_ms, self.state,
                                  frozenset(self.topic_partitions), self.txn_start_timestamp_ms,
                                  self.txn_last_update_timestamp_ms)

    # -- partitions -------------------------------------------------------------------------
    def add_partitions(self, partitions: set[TopicPartition] | frozenset[TopicPartition]) -> None:
        self.topic_partitions |= partitions

    def remove_partition(self, tp: TopicPartition) -> None:
        """A partition's marker is written (or the partition is gone): it leaves the set.
        Only while the transaction is ending, as Kafka's `removePartition`."""
        if self.state not in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT):
            raise IllegalTransitionError(
                f"{self.transactional_id}: removing {tp} whose marker was sent in state "
                f"{self.state.kafka_name} (pending {self.pending_state})")
        self.topic_partitions.discard(tp)

    # -- prepare ----------------------------------------------------------------------------
    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        """Fence the current producer: bump the epoch (unless an earlier fence's write failed,
        whose bump is reused) and go to PrepareEpochFence; the coordinator then aborts the
        open transaction with that epoch. InitProducerId of a new instance does this."""
        if self.producer_epoch == SHORT_MAX:
            raise IllegalTransitionError(
                f"cannot fence producer {self.producer_id} at epoch {SHORT_MAX}: it would overflow")
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(TransactionState.PREPARE_EPOCH_FENCE, self.producer_id, bumped,
                             NO_PRODUCER_EPOCH, self.txn_timeout_ms, frozenset(self.topic_partitions),
                             self.txn_start_timestamp_ms, self.txn_last_update_timestamp_ms)

    def prepare_increment_producer_epoch(self, new_txn_timeout_ms: int, expected_producer_epoch: int | None,
                                         update_timestamp_ms: int) -> TxnTransitMetadata | ErrorCode:
        """InitProducerId on an id with no open transaction: the next epoch, state Empty.

        Without an expected epoch (a new producer instance): epoch + 1, last epoch -1. With
        one (KIP-360, the client's current epoch): epoch + 1 and last epoch = current when it
        matches the current epoch (or there is none yet); the current epoch again when it
        matches the *last* epoch (a retry of a bump that already succeeded); otherwise
        `ErrorCode.PRODUCER_FENCED`. Raises when the epoch is exhausted (the caller rotates
        the producer id first)."""
        if self.is_producer_epoch_exhausted:
            raise IllegalTransitionError(f"no producer epoch left for producer id {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_producer_epoch is None:
            next_epoch, last_epoch = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_producer_epoch == self.producer_epoch:
            next_epoch, last_epoch = bumped, self.producer_epoch
        elif expected_producer_epoch == self.last_producer_epoch:
            next_epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        else:
            return ErrorCode.PRODUCER_FENCED
        return self._prepare(TransactionState.EMPTY, self.producer_id, next_epoch, last_epoch,
                             new_txn_timeout_ms, frozenset(), NO_TIMESTAMP, update_timestamp_ms)

    def prepare_producer_id_rotation(self, new_producer_id: int, new_txn_timeout_ms: int,
                                     update_timestamp_ms: int, record_last_epoch: bool) -> TxnTransitMetadata:
        """A new producer id at epoch 0, state Empty (the epoch of the old id is exhausted).
        With `record_last_epoch` (a KIP-360 retry may follow), the old epoch is kept as last."""
        if self.has_pending_transaction:
            raise IllegalTransitionError("cannot rotate producer ids while a transaction is still pending")
        return self._prepare(TransactionState.EMPTY, new_producer_id, 0,
                             self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
                             new_txn_timeout_ms, frozenset(), NO_TIMESTAMP, update_timestamp_ms)

    def prepare_add_partitions(self, added: set[TopicPartition] | frozenset[TopicPartition],
                               update_timestamp_ms: int) -> TxnTransitMetadata:
        """AddPartitionsToTxn (and AddOffsetsToTxn, which adds the group's offsets partition):
        state Ongoing with the union of partitions; a transaction starts now when none was open."""
        if self.state in (TransactionState.EMPTY, TransactionState.COMPLETE_ABORT,
                          TransactionState.COMPLETE_COMMIT):
            start = update_timestamp_ms
        else:
            start = self.txn_start_timestamp_ms
        return self._prepare(TransactionState.ONGOING, self.producer_id, self.producer_epoch,
                             self.last_producer_epoch, self.txn_timeout_ms,
                             frozenset(self.topic_partitions | set(added)), start, update_timestamp_ms)

    def prepare_abort_or_commit(self, new_state: TransactionState, update_timestamp_ms: int) -> TxnTransitMetadata:
        """EndTxn (or a timeout's abort): PrepareCommit or PrepareAbort, same partitions."""
        return self._prepare(new_state, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(self.topic_partitions),
                             self.txn_start_timestamp_ms, update_timestamp_ms)

    def prepare_complete(self, update_timestamp_ms: int) -> TxnTransitMetadata:
        """Every marker is written: CompleteCommit after PrepareCommit, else CompleteAbort.
        Clears the failed-fence flag (the fenced epoch is now in the log)."""
        new_state = (TransactionState.COMPLETE_COMMIT if self.state is TransactionState.PREPARE_COMMIT
                     else TransactionState.COMPLETE_ABORT)
        self.has_failed_epoch_fence = False
        return self._prepare(new_state, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(), self.txn_start_timestamp_ms, update_timestamp_ms)

    def prepare_dead(self) -> TxnTransitMetadata:
        """The transactional id expires: its tombstone is written and it leaves the cache."""
        return self._prepare(TransactionState.DEAD, self.producer_id, self.producer_epoch,
                             self.last_producer_epoch, self.txn_timeout_ms, frozenset(),
                             self.txn_start_timestamp_ms, self.txn_last_update_timestamp_ms)

    def _prepare(self, new_state: TransactionState, new_producer_id: int, new_epoch: int, new_last_epoch: int,
                 new_txn_timeout_ms: int, new_partitions: frozenset[TopicPartition],
                 new_txn_start_timestamp_ms: int, update_timestamp_ms: int) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise IllegalTransitionError(
                f"{self.transactional_id}: preparing a transition to {new_state.kafka_name} while "
                f"{self.pending_state.kafka_name} is pending")
        if new_producer_id < 0:
            raise IllegalTransitionError(f"illegal new producer id {new_producer_id}")
        # A new id's epoch is -1 until its first InitProducerId; it may stay so until Dead.
        if new_state is not TransactionState.DEAD and new_epoch < 0:
            raise IllegalTransitionError(f"illegal new producer epoch {new_epoch}")
        if self.state not in new_state.valid_previous_states:
            raise IllegalTransitionError(
                f"{self.transactional_id}: {new_state.kafka_name} cannot follow {self.state.kafka_name}")
        self.pending_state = new_state
        return TxnTransitMetadata(new_producer_id, self.producer_id, new_epoch, new_last_epoch,
                                  new_txn_timeout_ms, new_state, new_partitions,
                                  new_txn_start_timestamp_ms, update_timestamp_ms)

    # -- complete ---------------------------------------------------------------------------
    def complete_transition_to(self, transit: TxnTransitMetadata) -> None:
        """Apply a transit once its record is in `__transaction_state`. Checks, as Kafka's
        `completeTransitionTo`, that it is the pending one and consistent: the epoch the same
        (or, to Empty, one more or 0 for a new id), partitions only grow while Ongoing and stay
        equal into Prepare*, the timeout unchanged outside InitProducerId. Raises
        `IllegalTransitionError` otherwise; PrepareEpochFence and Dead are never completed
        (the first is followed by PrepareAbort's own prepare, the second removes the id)."""
        to_state = self.pending_state
        if to_state is None:
            raise IllegalTransitionError(
                f"{self.transactional_id}: completing a transition with no pending state")
        if to_state is not transit.txn_state:
            self._fail(transit)
        if to_state is TransactionState.EMPTY:  # InitProducerId
            if ((self.producer_epoch != transit.producer_epoch and not self._valid_epoch_bump(transit))
                    or transit.topic_partitions or transit.txn_start_timestamp_ms != NO_TIMESTAMP):
                self._fail(transit)
            self.txn_timeout_ms = transit.txn_timeout_ms
            self.producer_epoch = transit.producer_epoch
            self.last_producer_epoch = transit.last_producer_epoch
            self.producer_id = transit.producer_id
            self.last_producer_id = transit.last_producer_id
        elif to_state is TransactionState.ONGOING:  # AddPartitionsToTxn, AddOffsetsToTxn
            if (not self._valid_epoch(transit) or not self.topic_partitions <= transit.topic_partitions
                    or self.txn_timeout_ms != transit.txn_timeout_ms):
                self._fail(transit)
            self.txn_start_timestamp_ms = transit.txn_start_timestamp_ms
            self.add_partitions(transit.topic_partitions)
        elif to_state in (TransactionState.PREPARE_ABORT, TransactionState.PREPARE_COMMIT):  # EndTxn
            if (not self._valid_epoch(transit) or self.topic_partitions != transit.topic_partitions
                    or self.txn_timeout_ms != transit.txn_timeout_ms
                    or self.txn_start_timestamp_ms != transit.txn_start_timestamp_ms):
                self._fail(transit)
        elif to_state in (TransactionState.COMPLETE_ABORT, TransactionState.COMPLETE_COMMIT):  # markers
            if (not self._valid_epoch(transit) or self.txn_timeout_ms != transit.txn_timeout_ms
                    or transit.txn_start_timestamp_ms == NO_TIMESTAMP):
                self._fail(transit)
            self.txn_start_timestamp_ms = transit.txn_start_timestamp_ms
            self.topic_partitions.clear()
        else:  # PrepareEpochFence, Dead
            raise IllegalTransitionError(
                f"{self.transactional_id}: a transition to {to_state.kafka_name} is never completed")
        self.txn_last_update_timestamp_ms = transit.txn_last_update_timestamp_ms
        self.pending_state = None
        self.state = to_state

    def _valid_epoch(self, transit: TxnTransitMetadata) -> bool:
        return transit.producer_epoch == self.producer_epoch and transit.producer_id == self.producer_id

    def _valid_epoch_bump(self, transit: TxnTransitMetadata) -> bool:
        return (transit.producer_epoch == self.producer_epoch + 1
                or (transit.producer_epoch == 0 and transit.producer_id != self.producer_id))

    def _fail(self, transit: TxnTransitMetadata) -> None:
        raise IllegalTransitionError(
            f"{self!r}: transition to {transit} does not match the metadata")


def validate_transaction_timeout_ms(txn_timeout_ms: int, max_timeout_ms: int) -> bool:
    """InitProducerId's check (TransactionCoordinator's `validateTransactionTimeoutMs`): a
    timeout above transaction.max.timeout.ms or not positive is INVALID_TRANSACTION_TIMEOUT."""
    return 0 < txn_timeout_ms <= max_timeout_ms


__all__ = [
    "IllegalTransitionError", "NO_PRODUCER_EPOCH", "NO_PRODUCER_ID", "TransactionMetadata",
    "TransactionState", "TxnTransitMetadata", "is_epoch_exhausted", "validate_transaction_timeout_ms",
]
