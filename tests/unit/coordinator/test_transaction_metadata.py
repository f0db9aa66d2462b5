"""The transaction state machine: Kafka 3.9's TransactionMetadataTest scenarios, the states'
ids and names, the refusals, timeouts and expiry."""
from __future__ import annotations

import pytest
from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.coordinator.transaction.transaction_metadata import (
    NO_PRODUCER_EPOCH,
    IllegalTransitionError,
    TransactionMetadata,
    TransactionState,
    validate_transaction_timeout_ms,
)

S = TransactionState
TXN_ID = "txn-1"
PID = 23423
NOW = 1_700_000_000_000
TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


def meta(epoch: int = 1, state: TransactionState = S.EMPTY, *, last_epoch: int = NO_PRODUCER_EPOCH,
         partitions: set | None = None, start: int = 1) -> TransactionMetadata:
    return TransactionMetadata(TXN_ID, PID, epoch, 30_000, NOW, last_producer_epoch=last_epoch, state=state,
                               topic_partitions=partitions, txn_start_timestamp_ms=start)


def bump(m: TransactionMetadata, expected: int | None, now: int = NOW) -> None:
    transit = m.prepare_increment_producer_epoch(30_000, expected, now)
    assert not isinstance(transit, ErrorCode)
    m.complete_transition_to(transit)


@pytest.mark.parametrize("state,state_id,name", [
    (S.EMPTY, 0, "Empty"), (S.ONGOING, 1, "Ongoing"), (S.PREPARE_COMMIT, 2, "PrepareCommit"),
    (S.PREPARE_ABORT, 3, "PrepareAbort"), (S.COMPLETE_COMMIT, 4, "CompleteCommit"),
    (S.COMPLETE_ABORT, 5, "CompleteAbort"), (S.DEAD, 6, "Dead"), (S.PREPARE_EPOCH_FENCE, 7, "PrepareEpochFence"),
], ids=lambda v: str(v))
def test_state_ids_and_names_are_kafkas(state, state_id, name):
    assert int(state) == state_id and TransactionState(state_id) is state
    assert state.kafka_name == name and TransactionState.from_name(name) is state


def test_a_new_id_gets_epoch_zero():
    m = meta(epoch=NO_PRODUCER_EPOCH)
    bump(m, None)
    assert (m.producer_id, m.producer_epoch, m.last_producer_epoch, m.state) == (PID, 0, NO_PRODUCER_EPOCH, S.EMPTY)


def test_a_new_instance_bumps_the_epoch_and_forgets_the_last():
    m = meta(epoch=735)
    bump(m, None)
    assert (m.producer_epoch, m.last_producer_epoch) == (736, NO_PRODUCER_EPOCH)


def test_kip360_bump_with_the_current_epoch_records_it_as_last():
    m = meta(epoch=735)
    bump(m, 735)
    assert (m.producer_epoch, m.last_producer_epoch) == (736, 735)


def test_kip360_bump_of_a_newly_created_id_gives_epoch_zero():
    m = meta(epoch=NO_PRODUCER_EPOCH)
    bump(m, 735)
    assert (m.producer_epoch, m.last_producer_epoch) == (0, NO_PRODUCER_EPOCH)


def test_kip360_retry_with_the_last_epoch_gets_the_same_answer():
    m = meta(epoch=735, last_epoch=734)
    bump(m, 734)
    assert (m.producer_epoch, m.last_producer_epoch) == (735, 734)


def test_kip360_retry_with_an_older_epoch_is_fenced():
    m = meta(epoch=735, last_epoch=734)
    assert m.prepare_increment_producer_epoch(30_000, 733, NOW) is ErrorCode.PRODUCER_FENCED
    assert m.pending_state is None


def test_no_bump_once_the_epoch_is_exhausted():
    m = meta(epoch=32766)
    assert m.is_producer_epoch_exhausted
    with pytest.raises(IllegalTransitionError):
        m.prepare_increment_producer_epoch(30_000, None, NOW)


def test_rotation_gives_a_new_id_at_epoch_zero_and_keeps_the_old_epoch():
    m = meta(epoch=32766)
    m.complete_transition_to(m.prepare_producer_id_rotation(9893, 30_000, NOW, record_last_epoch=True))
    assert (m.producer_id, m.last_producer_id, m.producer_epoch, m.last_producer_epoch) == (9893, PID, 0, 32766)


@pytest.mark.parametrize("state", [S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT])
def test_no_rotation_while_a_transaction_is_open(state):
    with pytest.raises(IllegalTransitionError):
        meta(epoch=32766, state=state).prepare_producer_id_rotation(9893, 30_000, NOW, record_last_epoch=True)


def test_an_update_time_earlier_than_the_last_is_tolerated():
    m = meta(epoch=1)
    bump(m, 1, NOW - 1)
    assert (m.producer_epoch, m.last_producer_epoch, m.txn_last_update_timestamp_ms) == (2, 1, NOW - 1)


def test_a_whole_commit_cycle():
    m = meta(epoch=0)
    m.complete_transition_to(m.prepare_add_partitions({TP0}, NOW + 10))
    assert (m.state, m.topic_partitions, m.txn_start_timestamp_ms) == (S.ONGOING, {TP0}, NOW + 10)
    m.complete_transition_to(m.prepare_add_partitions({TP1}, NOW + 20))
    assert m.topic_partitions == {TP0, TP1} and m.txn_start_timestamp_ms == NOW + 10
    m.complete_transition_to(m.prepare_abort_or_commit(S.PREPARE_COMMIT, NOW + 30))
    assert m.state is S.PREPARE_COMMIT and m.topic_partitions == {TP0, TP1}
    m.remove_partition(TP0)
    transit = m.prepare_complete(NOW + 40)
    assert transit.txn_state is S.COMPLETE_COMMIT and transit.topic_partitions == frozenset()
    m.complete_transition_to(transit)
    assert (m.state, m.topic_partitions, m.txn_start_timestamp_ms, m.txn_last_update_timestamp_ms) == (
        S.COMPLETE_COMMIT, set(), NOW + 10, NOW + 40)
    # the next transaction starts afresh
    m.complete_transition_to(m.prepare_add_partitions({TP1}, NOW + 50))
    assert m.txn_start_timestamp_ms == NOW + 50


def test_prepare_abort_completes_as_complete_abort():
    m = meta(epoch=1, state=S.PREPARE_ABORT)
    m.complete_transition_to(m.prepare_complete(NOW - 1))
    assert (m.state, m.producer_epoch, m.txn_start_timestamp_ms) == (S.COMPLETE_ABORT, 1, 1)


def test_fencing_bumps_the_epoch_then_aborts_with_it():
    m = meta(epoch=5, state=S.ONGOING, partitions={TP0})
    fence = m.prepare_fence_producer_epoch()
    assert (fence.producer_epoch, fence.last_producer_epoch, m.pending_state) == (6, NO_PRODUCER_EPOCH, S.PREPARE_EPOCH_FENCE)
    with pytest.raises(IllegalTransitionError):
        m.complete_transition_to(fence)         # a fence is never completed
    m.pending_state = None                       # the coordinator goes on to abort
    m.producer_epoch = fence.producer_epoch
    m.state = S.PREPARE_EPOCH_FENCE
    m.complete_transition_to(m.prepare_abort_or_commit(S.PREPARE_ABORT, NOW))
    assert m.state is S.PREPARE_ABORT and m.producer_epoch == 6


def test_a_failed_fence_is_not_bumped_again():
    m = meta(epoch=5, state=S.ONGOING)
    m.has_failed_epoch_fence = True
    assert m.prepare_fence_producer_epoch().producer_epoch == 5


def test_fencing_an_exhausted_epoch_reaches_short_max_then_no_further():
    m = meta(epoch=32766, state=S.ONGOING)
    assert m.prepare_fence_producer_epoch().producer_epoch == 32767
    with pytest.raises(IllegalTransitionError):
        meta(epoch=32767, state=S.ONGOING).prepare_fence_producer_epoch()


def test_a_second_prepare_while_one_is_pending_is_refused():
    m = meta(epoch=0)
    m.prepare_add_partitions({TP0}, NOW)
    with pytest.raises(IllegalTransitionError, match="pending"):
        m.prepare_add_partitions({TP1}, NOW)


@pytest.mark.parametrize("state,target", [
    (S.EMPTY, S.PREPARE_COMMIT), (S.COMPLETE_COMMIT, S.PREPARE_ABORT), (S.PREPARE_COMMIT, S.PREPARE_ABORT),
    (S.PREPARE_ABORT, S.PREPARE_COMMIT),
])
def test_end_txn_outside_ongoing_is_refused(state, target):
    with pytest.raises(IllegalTransitionError):
        meta(state=state).prepare_abort_or_commit(target, NOW)


def test_adding_partitions_while_ending_is_refused():
    with pytest.raises(IllegalTransitionError):
        meta(state=S.PREPARE_COMMIT).prepare_add_partitions({TP0}, NOW)


def test_completing_a_transit_that_is_not_the_pending_one_is_refused():
    m = meta(epoch=0)
    other = meta(epoch=0).prepare_add_partitions({TP0}, NOW)
    with pytest.raises(IllegalTransitionError, match="no pending"):
        m.complete_transition_to(other)
    m.prepare_increment_producer_epoch(30_000, None, NOW)
    with pytest.raises(IllegalTransitionError):
        m.complete_transition_to(other)


def test_a_marker_removal_outside_prepare_is_refused():
    with pytest.raises(IllegalTransitionError):
        meta(state=S.ONGOING, partitions={TP0}).remove_partition(TP0)


def test_dead_is_prepared_from_expirable_states_only():
    for state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT):
        assert meta(state=state).prepare_dead().txn_state is S.DEAD
    with pytest.raises(IllegalTransitionError):
        meta(state=S.ONGOING).prepare_dead()


def test_timed_out_means_ongoing_past_its_timeout_with_nothing_pending():
    m = meta(state=S.ONGOING, start=NOW)
    assert not m.is_timed_out(NOW + 30_000)
    assert m.is_timed_out(NOW + 30_001)
    m.prepare_abort_or_commit(S.PREPARE_ABORT, NOW)
    assert not m.is_timed_out(NOW + 30_001)
    assert not meta(state=S.EMPTY, start=NOW).is_timed_out(NOW + 60_000)


def test_expiry_needs_an_expirable_state_and_the_whole_idle_time():
    m = meta(state=S.COMPLETE_COMMIT)
    assert not m.is_expired(NOW + 999, 1000) and m.is_expired(NOW + 1000, 1000)
    assert not meta(state=S.ONGOING).is_expired(NOW + 10_000, 1000)


@pytest.mark.parametrize("timeout_ms,ok", [(0, False), (-1, False), (1, True), (900_000, True), (900_001, False)])
def test_transaction_timeout_is_capped_by_the_max(timeout_ms, ok):
    assert validate_transaction_timeout_ms(timeout_ms, 900_000) is ok
