"""PartitionLog with transactions (no Ray): markers written as the leader and copied as a
follower, the LSO, the aborted transactions of a read_committed read, `.txnindex` in Kafka's
bytes, and all of it rebuilt after an unclean restart and a truncation."""
from __future__ import annotations

import struct

import pytest
from rafka.common.config import LogConfig
from rafka.partition_worker.control_records import ControlRecordType, EndTransactionMarker
from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.producer_state import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    TransactionCoordinatorFencedError,
    list_snapshots,
)
from rafka.partition_worker.record_batch import Record, encode_batch
from rafka.partition_worker.txn_index import AbortedTxn, txn_index_file_name

MAX = 1 << 20
P1, P2 = 4000, 5000
NOW = 1_700_000_000_000
SMALL = LogConfig(segment_bytes=1024, index_interval_bytes=128)


def txn_batch(seq: int, n: int = 2, pid: int = P1, epoch: int = 0, txn: bool = True) -> bytes:
    records = [Record(i, NOW + i, f"k{seq + i}".encode(), b"v" * 40) for i in range(n)]
    return encode_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=txn)


def commit(epoch: int = 0) -> EndTransactionMarker:
    return EndTransactionMarker(ControlRecordType.COMMIT, epoch)


def abort(epoch: int = 0) -> EndTransactionMarker:
    return EndTransactionMarker(ControlRecordType.ABORT, epoch)


def open_log(path, config: LogConfig = LogConfig()) -> PartitionLog:
    return PartitionLog.open(path, config, now_ms=NOW)


def produce(log: PartitionLog, data: bytes) -> int:
    return log.append(bytearray(data), leader_epoch=0, max_batch_bytes=MAX, now_ms=NOW).base_offset


def end(log: PartitionLog, marker: EndTransactionMarker, pid: int, epoch: int = 0) -> int:
    return log.append_end_txn_marker(marker, pid, epoch, leader_epoch=0, now_ms=NOW).base_offset


def interleaved(log: PartitionLog) -> None:
    """P1 0-1, P2 2-3, P1 4-5, P2 aborts at 6, P1 commits at 7, plain 8."""
    produce(log, txn_batch(0, pid=P1))
    produce(log, txn_batch(0, pid=P2))
    produce(log, txn_batch(2, pid=P1))
    assert end(log, abort(), P2) == 6
    assert end(log, commit(), P1) == 7
    produce(log, txn_batch(0, n=1, pid=9999, txn=False))


def test_lso_follows_open_transactions_and_the_high_watermark(tmp_path):
    log = open_log(tmp_path / "t-0")
    produce(log, txn_batch(0, pid=P1))
    produce(log, txn_batch(0, pid=P2))
    assert log.last_stable_offset(4) == 0
    end(log, commit(), P1)                        # at 4; P2 still open from 2
    assert log.last_stable_offset(5) == 2
    end(log, abort(), P2)                         # at 5
    assert log.last_stable_offset(5) == 2          # P2's marker at 5 is not below the HW yet
    assert log.last_stable_offset(6) == 6


def test_aborts_are_indexed_in_kafkas_bytes_and_reported_to_read_committed(tmp_path):
    log = open_log(tmp_path / "t-0")
    interleaved(log)
    index = log.directory / txn_index_file_name(0)
    # P2's transaction: first offset 2, marker 6, LSO after it: P1's open transaction at 0
    assert index.read_bytes() == struct.pack(">hqqqq", 0, P2, 2, 6, 0)
    assert log.aborted_transactions(0, 9) == [AbortedTxn(P2, 2, 6, 0)]
    assert log.aborted_transactions(7, 9) == []
    assert log.last_stable_offset(9) == 9


def test_a_plain_write_inside_a_transaction_is_refused_and_writes_nothing(tmp_path):
    log = open_log(tmp_path / "t-0")
    produce(log, txn_batch(0))
    with pytest.raises(InvalidTxnStateError):
        produce(log, txn_batch(2, txn=False))
    assert log.log_end_offset == 2


def test_stale_markers_are_refused_and_write_nothing(tmp_path):
    log = open_log(tmp_path / "t-0")
    produce(log, txn_batch(0, epoch=3))
    with pytest.raises(InvalidProducerEpochError):
        end(log, commit(), P1, epoch=2)
    end(log, commit(5), P1, epoch=3)
    produce(log, txn_batch(2, epoch=3))
    with pytest.raises(TransactionCoordinatorFencedError):
        end(log, abort(4), P1, epoch=3)
    assert log.log_end_offset == 5 and log.last_stable_offset(5) == 3


def test_an_abort_spanning_segments_is_found_from_the_first(tmp_path):
    log = open_log(tmp_path / "t-0", SMALL)
    produce(log, txn_batch(0, pid=P1))
    for seq in range(0, 40, 2):                   # plain writes roll several segments
        produce(log, txn_batch(seq, pid=P2, txn=False))
    marker = end(log, abort(), P1)
    assert len(log.segments) > 2
    base = log.segments[-1].base_offset
    assert (log.directory / txn_index_file_name(base)).exists()
    assert log.aborted_transactions(0, 2) == [AbortedTxn(P1, 0, marker, marker + 1)]


def test_unclean_restart_rebuilds_the_index_and_open_transactions(tmp_path):
    log = open_log(tmp_path / "t-0")
    interleaved(log)
    produce(log, txn_batch(4, pid=P1))            # P1 opens another transaction at 9
    log.flush()
    for _, path in list_snapshots(log.directory):
        path.unlink()
    (log.directory / txn_index_file_name(0)).unlink()
    reopened = open_log(tmp_path / "t-0")
    assert reopened.aborted_transactions(0, 11) == [AbortedTxn(P2, 2, 6, 0)]
    assert reopened.last_stable_offset(11) == 9
    end(reopened, commit(), P1)
    assert reopened.last_stable_offset(12) == 12


def test_a_replay_from_a_snapshot_does_not_index_an_abort_twice(tmp_path):
    log = open_log(tmp_path / "t-0")
    interleaved(log)
    log.flush()
    reopened = open_log(tmp_path / "t-0")          # no snapshot after the markers: replayed
    assert reopened.aborted_transactions(0, 9) == [AbortedTxn(P2, 2, 6, 0)]
    assert (reopened.directory / txn_index_file_name(0)).stat().st_size == 34


def test_clean_restart_keeps_an_open_transaction(tmp_path):
    log = open_log(tmp_path / "t-0")
    produce(log, txn_batch(0))
    log.close()
    reopened = open_log(tmp_path / "t-0")
    assert reopened.last_stable_offset(2) == 0
    with pytest.raises(InvalidTxnStateError):
        produce(reopened, txn_batch(2, txn=False))


def test_truncation_below_a_marker_reopens_its_transaction_and_drops_its_entry(tmp_path):
    log = open_log(tmp_path / "t-0")
    interleaved(log)
    log.truncate_to(6, now_ms=NOW)
    assert log.aborted_transactions(0, 6) == []
    assert (log.directory / txn_index_file_name(0)).stat().st_size == 0
    assert log.last_stable_offset(6) == 0          # both transactions are open again


def test_a_follower_copying_the_leaders_bytes_builds_the_same_index(tmp_path):
    leader = open_log(tmp_path / "leader" / "t-0")
    interleaved(leader)
    data = b"".join(leader.read_bytes(r) for r in leader.read(0, MAX).regions)
    follower = open_log(tmp_path / "follower" / "t-0")
    follower.append_as_follower(data, now_ms=NOW)
    assert follower.aborted_transactions(0, 9) == leader.aborted_transactions(0, 9)
    assert follower.last_stable_offset(9) == 9


def test_deleted_segments_take_their_txnindex_with_them(tmp_path):
    log = open_log(tmp_path / "t-0", SMALL)
    produce(log, txn_batch(0, pid=P1))
    end(log, abort(), P1)
    for seq in range(0, 40, 2):
        produce(log, txn_batch(seq, pid=P2, txn=False))
    assert (log.directory / txn_index_file_name(0)).exists()
    log.maybe_increment_log_start_offset(log.segments[-1].base_offset, log.log_end_offset, "test")
    log.delete_segments_below_log_start(log.log_end_offset, now_ms=NOW)
    assert not (log.directory / txn_index_file_name(0)).exists()
    assert (log.directory / (txn_index_file_name(0) + ".deleted")).exists()
    assert log.aborted_transactions(log.log_start_offset, log.log_end_offset) == []


def test_compaction_stops_below_an_open_transaction(tmp_path):
    config = LogConfig(segment_bytes=1024, index_interval_bytes=128, cleanup_policy=("compact",))
    log = open_log(tmp_path / "t-0", config)
    for seq in range(0, 10, 2):
        produce(log, txn_batch(seq, pid=P2, txn=False))
    first = produce(log, txn_batch(0, pid=P1))      # stays open
    for seq in range(10, 40, 2):
        produce(log, txn_batch(seq, pid=P2, txn=False))
    holder = max(s.base_offset for s in log.segments if s.base_offset <= first)
    assert log.cleanable(NOW, None, max_offset=log.log_end_offset).first_uncleanable_offset <= holder
    end(log, commit(), P1)
    assert log.cleanable(NOW, None, max_offset=log.log_end_offset).first_uncleanable_offset == \
        log.segments[-1].base_offset


def _records(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None, bool]]:
    """(offset, key, value, is_control) of every record left in the log."""
    from rafka.partition_worker.record_batch import decode_records, iter_batches
    data = b"".join(log.read_bytes(r) for r in log.read(log.log_start_offset, 1 << 24).regions)
    out = []
    for h in iter_batches(data):
        for r in decode_records(data, h.position)[1]:
            out.append((r.offset, r.key, r.value, h.is_control))
    return out


def keyed(pid: int, seq: int, keys: list[str], value: bytes, txn: bool = True) -> bytes:
    records = [Record(i, NOW, k.encode(), value) for i, k in enumerate(keys)]
    return encode_batch(records, producer_id=pid, producer_epoch=0, base_sequence=seq, is_transactional=txn)


def test_compaction_drops_aborted_records_keeps_committed_and_then_the_markers(tmp_path):
    config = LogConfig(segment_bytes=400, index_interval_bytes=128, cleanup_policy=("compact",),
                       delete_retention_ms=1_000)
    log = open_log(tmp_path / "t-0", config)
    produce(log, keyed(P1, 0, ["a", "b"], b"committed"))
    produce(log, keyed(P2, 0, ["a", "c"], b"aborted"))
    abort_at = end(log, abort(), P2)
    commit_at = end(log, commit(), P1)
    for i in range(12):                                   # other keys roll segments past the markers
        produce(log, keyed(7, i, [f"x{i}"], b"p" * 60, txn=False))
    assert len(log.segments) > 3
    result = log.clean(1 << 20, NOW, None, max_offset=log.log_end_offset)
    assert result.ok, result.error
    left = _records(log)
    assert [(k, v) for _, k, v, c in left if not c and v != b"p" * 60] == [(b"a", b"committed"), (b"b", b"committed")]
    # both markers stay: their transactions' batches were met in this pass; the abort's entry too
    assert [o for o, _, _, c in left if c] == [abort_at, commit_at]
    assert log.aborted_transactions(0, log.log_end_offset) == [AbortedTxn(P2, 2, abort_at, 0)]  # P1 was open
    # P2's last batch stays, emptied, while P2 is an active producer (its sequence), and with it
    # the abort marker, as in Kafka; once P2 expires the empty batch goes...
    assert P2 in log.remove_expired_producers(NOW + 2 * 86_400_000)
    assert log.clean(1 << 20, NOW, None, max_offset=log.log_end_offset).ok
    assert abort_at in [o for o, _, _, c in _records(log) if c]
    # ...then the marker, with no batch of its transaction left, gets its delete horizon...
    assert log.clean(1 << 20, NOW, None, max_offset=log.log_end_offset).ok
    assert abort_at in [o for o, _, _, c in _records(log) if c]
    # ...and a pass after the horizon drops it and its index entry; the commit marker stays
    # while its transaction's records do
    assert log.clean(1 << 20, NOW + 2_000, None, max_offset=log.log_end_offset).ok
    left = _records(log)
    assert [o for o, _, _, c in left if c] == [commit_at]
    assert [(k, v) for _, k, v, c in left if not c and v != b"p" * 60] == [(b"a", b"committed"), (b"b", b"committed")]
    assert log.aborted_transactions(0, log.log_end_offset) == []
