"""read_committed reads of a dormant replica's closed log: the last stable offset from the
producer snapshot written at close, the aborted transactions from the `.txnindex` files, and
the cases where only the replica can tell (then the read needs it)."""
from __future__ import annotations

import pytest

from rafka.common.errors import ErrorCode
from rafka.partition_worker.closed_log import ClosedLogError, ClosedLogReader, read_closed_log
from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.messages import AbortedTransaction, FetchIsolation
from rafka.partition_worker.producer_state import snapshot_file_name
from tests.unit.storage.test_closed_log import MAX, SMALL, batch, offsets_in
from tests.unit.storage.test_transactional_log import P1, P2, abort, commit, end, produce, txn_batch

COMMITTED = FetchIsolation.TXN_COMMITTED


def close_with(directory, steps) -> int:
    """A log written by `steps(log)` over small segments and closed cleanly; its end."""
    log = PartitionLog.open(directory, SMALL)
    steps(log)
    log_end = log.log_end_offset
    log.close()
    return log_end


def test_an_open_transaction_bounds_read_committed_reads_of_the_closed_log(tmp_path):
    def steps(log):
        produce(log, batch())                    # 0-2
        produce(log, txn_batch(0, pid=P1))       # 3-4, left open
        produce(log, batch())                    # 5-7
    log_end = close_with(tmp_path, steps)
    closed = read_closed_log(tmp_path)
    assert (closed.last_stable_offset, closed.high_watermark) == (3, log_end)
    reader = ClosedLogReader(closed)
    committed = reader.read(0, MAX, isolation=COMMITTED)
    assert offsets_in(committed) == [0, 1, 2] and committed.aborted_transactions == ()
    assert committed.last_stable_offset == 3 and committed.high_watermark == log_end
    assert reader.read(3, MAX, isolation=COMMITTED).regions == ()
    uncommitted = reader.read(0, MAX)
    assert offsets_in(uncommitted) == list(range(log_end)) and uncommitted.last_stable_offset == 3
    assert uncommitted.aborted_transactions is None


def test_aborted_transactions_come_from_the_segments_txn_indexes(tmp_path):
    def steps(log):
        produce(log, txn_batch(0, pid=P1))       # 0-1
        produce(log, txn_batch(0, pid=P2))       # 2-3
        assert end(log, abort(), P2) == 4
        for _ in range(12):                      # several 1 KiB segments later
            produce(log, batch())
        assert end(log, abort(), P1) > 5         # P1's abort lands in a later segment than its records
    log_end = close_with(tmp_path, steps)
    closed = read_closed_log(tmp_path)
    assert len(closed.bases) > 2 and closed.last_stable_offset == log_end
    reader = ClosedLogReader(closed)
    first = reader.read(0, 200, isolation=COMMITTED)               # P1's records 0-1 only
    assert first.next_offset == 2 and first.aborted_transactions == (AbortedTransaction(P1, 0),)
    everything = reader.read(0, MAX, isolation=COMMITTED)
    assert everything.aborted_transactions == (AbortedTransaction(P2, 2), AbortedTransaction(P1, 0))
    seen, offset = [], 0
    while offset < log_end:                      # a reader working through it meets P1's abort at the end
        result = reader.read(offset, 300, isolation=COMMITTED)
        seen.extend(result.aborted_transactions)
        offset = result.next_offset
    assert AbortedTransaction(P1, 0) in seen and AbortedTransaction(P2, 2) in seen


def test_a_committed_log_reads_whole_with_no_aborts(tmp_path):
    def steps(log):
        produce(log, txn_batch(0, pid=P1))
        end(log, commit(), P1)
    log_end = close_with(tmp_path, steps)
    result = ClosedLogReader(read_closed_log(tmp_path)).read(0, MAX, isolation=COMMITTED)
    assert offsets_in(result) == list(range(log_end)) and result.aborted_transactions == ()


@pytest.mark.parametrize("why", ["high watermark below the log end", "no snapshot at the log end"])
def test_without_a_known_last_stable_offset_read_committed_needs_the_replica(tmp_path, why):
    log_end = close_with(tmp_path, lambda log: produce(log, batch()))
    if why == "no snapshot at the log end":
        (tmp_path / snapshot_file_name(log_end)).unlink()
        closed = read_closed_log(tmp_path)
    else:
        closed = read_closed_log(tmp_path, high_watermark=log_end - 1)
    assert closed.last_stable_offset is None
    reader = ClosedLogReader(closed)
    with pytest.raises(ClosedLogError):
        reader.read(0, MAX, isolation=COMMITTED)
    assert reader.read(0, MAX).error is ErrorCode.NONE       # read_uncommitted reads are still served


def test_a_new_partition_is_stable_at_zero(tmp_path):
    closed = read_closed_log(tmp_path / "new-0")
    assert closed.last_stable_offset == 0
    assert ClosedLogReader(closed).read(0, MAX, isolation=COMMITTED).aborted_transactions == ()
