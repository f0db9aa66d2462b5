"""Transactions in the producer state (Kafka 3.9's ProducerStateManager/ProducerAppendInfo):
open transactions, markers and their checks, the LSO arithmetic, snapshots and load."""
from __future__ import annotations

import pytest
from rafka.partition_worker.control_records import ControlRecordType, EndTransactionMarker
from rafka.partition_worker.producer_state import (
    CompletedTxn,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    ProducerStateManager,
    TransactionCoordinatorFencedError,
)
from rafka.partition_worker.record_batch import TRANSACTIONAL_FLAG_MASK, BatchHeader

P1, P2 = 1000, 2000
COMMIT = EndTransactionMarker(ControlRecordType.COMMIT, 0)
ABORT = EndTransactionMarker(ControlRecordType.ABORT, 0)


def batch(offset: int, seq: int, count: int = 1, pid: int = P1, epoch: int = 0, txn: bool = True,
          ts: int = 1_000) -> BatchHeader:
    return BatchHeader(base_offset=offset, batch_length=100, partition_leader_epoch=0, magic=2, crc=0,
                       attributes=TRANSACTIONAL_FLAG_MASK if txn else 0, last_offset_delta=count - 1,
                       base_timestamp=ts, max_timestamp=ts, producer_id=pid, producer_epoch=epoch,
                       base_sequence=seq, records_count=count)


def write(state: ProducerStateManager, h: BatchHeader) -> None:
    assert not state.check_append(h).is_duplicate
    state.update(h, h.base_offset)


def end(state: ProducerStateManager, pid: int, marker: EndTransactionMarker, offset: int,
        epoch: int = 0, hw: int | None = None) -> tuple[CompletedTxn | None, int | None]:
    """What the log does with a marker: check, record, LSO for the index, complete."""
    state.check_marker(pid, epoch, marker.coordinator_epoch)
    completed = state.update_marker(pid, epoch, marker, offset, 2_000)
    lso = None
    if completed is not None:
        lso = state.last_stable_offset(completed)
        state.complete_txn(completed)
    if hw is not None:
        state.on_high_watermark_updated(hw)
    return completed, lso


def test_a_transactional_batch_opens_a_transaction_at_its_first_offset():
    state = ProducerStateManager()
    write(state, batch(10, 0, count=3))
    write(state, batch(13, 3))
    assert state.last_entry(P1).current_txn_first_offset == 10
    assert state.first_unstable_offset() == state.first_undecided_offset() == 10
    assert [(t.producer_id, t.first_offset) for t in state.ongoing_transactions] == [(P1, 10)]


def test_a_plain_batch_inside_an_open_transaction_is_refused():
    state = ProducerStateManager()
    write(state, batch(0, 0))
    with pytest.raises(InvalidTxnStateError) as e:
        state.check_append(batch(1, 1, txn=False))
    assert e.value.code == 48


def test_an_out_of_order_plain_batch_gets_the_sequence_error_first():
    state = ProducerStateManager()
    write(state, batch(0, 0))
    with pytest.raises(OutOfOrderSequenceError):
        state.check_append(batch(1, 5, txn=False))


def test_a_commit_completes_and_the_lso_waits_for_the_high_watermark():
    state = ProducerStateManager()
    write(state, batch(0, 0, count=2))
    completed, lso = end(state, P1, COMMIT, 2)
    assert completed == CompletedTxn(P1, 0, 2, is_aborted=False) and lso == 3
    assert state.last_entry(P1).current_txn_first_offset is None
    assert state.first_undecided_offset() is None
    assert state.first_unstable_offset() == 0          # the marker is not below the HW yet
    state.on_high_watermark_updated(2)
    assert state.first_unstable_offset() == 0
    state.on_high_watermark_updated(3)
    assert state.first_unstable_offset() is None


def test_an_abort_records_the_lso_of_another_producers_open_transaction():
    state = ProducerStateManager()
    write(state, batch(0, 0, pid=P1))
    write(state, batch(1, 0, pid=P2))
    write(state, batch(2, 1, pid=P1))
    completed, lso = end(state, P1, ABORT, 3, hw=4)
    assert completed == CompletedTxn(P1, 0, 3, is_aborted=True)
    assert lso == 1                                     # P2's transaction, still open, starts at 1
    assert state.first_unstable_offset() == 1
    _, lso = end(state, P2, COMMIT, 4, hw=5)
    assert lso == 5 and state.first_unstable_offset() is None


def test_a_marker_without_an_open_transaction_completes_nothing():
    state = ProducerStateManager()
    write(state, batch(0, 0, txn=False))
    assert end(state, P1, ABORT, 1) == (None, None)
    assert state.last_entry(P1).coordinator_epoch == 0


def test_a_marker_with_an_older_producer_epoch_is_refused():
    state = ProducerStateManager()
    write(state, batch(0, 0, epoch=5))
    with pytest.raises(InvalidProducerEpochError):
        state.check_marker(P1, 4, 0)


def test_a_marker_from_an_older_coordinator_is_fenced():
    state = ProducerStateManager()
    write(state, batch(0, 0))
    end(state, P1, EndTransactionMarker(ControlRecordType.COMMIT, 7), 1)
    write(state, batch(2, 1))
    with pytest.raises(TransactionCoordinatorFencedError) as e:
        state.check_marker(P1, 0, 6)
    assert e.value.code == 52
    state.check_marker(P1, 0, 7)


def test_a_fencing_abort_with_a_bumped_epoch_fences_the_old_epoch():
    """Kafka's testProducerStateAfterFencingAbortMarker: the coordinator aborts with epoch + 1."""
    state = ProducerStateManager()
    write(state, batch(0, 0, epoch=0))
    completed, _ = end(state, P1, ABORT, 1, epoch=1)
    assert completed.is_aborted and state.last_entry(P1).producer_epoch == 1
    assert state.last_entry(P1).batches == type(state.last_entry(P1).batches)()
    with pytest.raises(InvalidProducerEpochError):
        state.check_append(batch(2, 1, epoch=0))


def test_completing_a_transaction_never_started_is_refused():
    with pytest.raises(ValueError):
        ProducerStateManager().complete_txn(CompletedTxn(P1, 0, 1, True))


def test_an_open_transaction_survives_a_snapshot_and_comes_back_ongoing(tmp_path):
    state = ProducerStateManager(producer_id_expiration_ms=1_000)
    write(state, batch(0, 0, pid=P1, ts=100))
    write(state, batch(1, 0, pid=P2, ts=100))
    end(state, P2, COMMIT, 2)
    state.write_snapshot(tmp_path, 3)
    loaded = ProducerStateManager(producer_id_expiration_ms=1_000)
    assert loaded.load_latest_snapshot(tmp_path, now_ms=1_000_000) == 3
    assert set(loaded.producers) == {P1}               # P2 expired; P1's open transaction keeps it
    assert loaded.first_undecided_offset() == loaded.first_unstable_offset() == 0
    end(loaded, P1, COMMIT, 3, hw=4)
    assert loaded.first_unstable_offset() is None


def test_an_open_transaction_keeps_its_producer_past_the_log_start_and_expiry():
    state = ProducerStateManager(producer_id_expiration_ms=10)
    write(state, batch(0, 0, ts=0))
    assert state.on_log_start_offset(5) == [] and state.remove_expired(1_000) == []
    end(state, P1, COMMIT, 6)
    state.on_log_start_offset(7)
    assert state.first_unstable_offset() is None


def test_truncating_fully_forgets_transactions():
    state = ProducerStateManager()
    write(state, batch(0, 0))
    state.truncate_fully()
    assert state.first_unstable_offset() is None and state.ongoing_transactions == []
