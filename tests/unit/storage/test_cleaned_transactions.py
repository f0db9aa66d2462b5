"""Compaction's transaction decisions (Kafka 3.9's CleanedTransactionMetadata and the batch
filter's marker rule), pass by pass: aborted data goes, markers stay while their transaction's
batches remain, then wait for their delete horizon."""
from __future__ import annotations

from rafka.partition_worker.cleaned_transactions import CleanedTransactions, discard_batch_records
from rafka.partition_worker.control_records import ControlRecordType
from rafka.partition_worker.record_batch import (
    CONTROL_FLAG_MASK,
    DELETE_HORIZON_FLAG_MASK,
    TRANSACTIONAL_FLAG_MASK,
    BatchHeader,
)
from rafka.partition_worker.txn_index import AbortedTxn

P1, P2 = 1, 2
ABORT, COMMIT = ControlRecordType.ABORT, ControlRecordType.COMMIT


def h(offset: int, pid: int = P1, txn: bool = True, control: bool = False, horizon: int | None = None) -> BatchHeader:
    attributes = (TRANSACTIONAL_FLAG_MASK if txn else 0) | (CONTROL_FLAG_MASK if control else 0)
    if horizon is not None:
        attributes |= DELETE_HORIZON_FLAG_MASK
    return BatchHeader(base_offset=offset, batch_length=100, partition_leader_epoch=0, magic=2, crc=0,
                       attributes=attributes, last_offset_delta=0,
                       base_timestamp=horizon if horizon is not None else 0, max_timestamp=0,
                       producer_id=pid, producer_epoch=0, base_sequence=0, records_count=1)


def test_aborted_batches_go_and_their_marker_stays_with_its_index_entry():
    aborted = AbortedTxn(P2, 1, 3, 4)
    t = CleanedTransactions()
    t.add_aborted_transactions([aborted])
    assert t.on_batch_read(h(0, P1)) is False                       # P1 committed later
    assert t.on_batch_read(h(1, P2)) is True
    assert t.on_batch_read(h(2, P2)) is True
    assert t.on_control_batch_read(h(3, P2, control=True), ABORT) is False
    assert t.on_control_batch_read(h(4, P1, control=True), COMMIT) is False
    assert t.retained_aborts == [aborted]


def test_the_next_pass_may_drop_markers_whose_batches_are_gone():
    aborted = AbortedTxn(P2, 1, 3, 4)
    t = CleanedTransactions()
    t.add_aborted_transactions([aborted])
    # pass 2: P2's data and P1's data were removed by pass 1 (aborted, and compacted away)
    assert t.on_control_batch_read(h(3, P2, control=True), ABORT) is True
    assert t.on_control_batch_read(h(4, P1, control=True), COMMIT) is True
    assert t.retained_aborts == []


def test_an_aborted_transaction_that_began_before_the_range_is_still_found():
    t = CleanedTransactions()
    t.add_aborted_transactions([AbortedTxn(P1, 5, 40, 41)])
    assert t.on_batch_read(h(30, P1)) is True


def test_plain_batches_are_never_dropped_for_transactions():
    t = CleanedTransactions()
    t.add_aborted_transactions([AbortedTxn(P1, 0, 3, 4)])
    assert t.on_batch_read(h(1, P1, txn=False)) is False


def test_empty_and_other_control_batches():
    t = CleanedTransactions()
    assert t.on_control_batch_read(h(0, control=True), None) is True
    assert t.on_control_batch_read(h(1, control=True), ControlRecordType.LEADER_CHANGE) is False


def test_a_later_transaction_of_the_same_producer_is_not_taken_for_the_aborted_one():
    t = CleanedTransactions()
    t.add_aborted_transactions([AbortedTxn(P1, 0, 1, 2), AbortedTxn(P1, 10, 11, 12)])
    assert t.on_batch_read(h(0)) is True
    assert t.on_control_batch_read(h(1, control=True), ABORT) is False
    assert t.on_batch_read(h(5)) is False                            # committed transaction between
    assert t.on_control_batch_read(h(6, control=True), COMMIT) is False
    assert t.on_batch_read(h(10)) is True


def test_markers_wait_for_their_delete_horizon():
    assert discard_batch_records(h(0), True, 100) is True
    assert discard_batch_records(h(0), False, 100) is False
    assert discard_batch_records(h(0, control=True), True, 100) is False            # no horizon yet
    assert discard_batch_records(h(0, control=True, horizon=101), True, 100) is False
    assert discard_batch_records(h(0, control=True, horizon=100), True, 100) is True
    assert discard_batch_records(h(0, control=True, horizon=50), False, 100) is False
