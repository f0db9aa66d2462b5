"""PartitionLog with idempotent producers: duplicates, refusals, snapshots at roll and close,
and producer state rebuilt after clean and unclean restarts (no Ray)."""
from __future__ import annotations

import os

import pytest

from rafka.common.config import LogConfig
from rafka.partition_worker.log import CLEAN_SHUTDOWN_FILE, PartitionLog
from rafka.partition_worker.producer_state import (
    InvalidProducerEpochError, OutOfOrderSequenceError, list_snapshots, snapshot_file_name,
)
from rafka.partition_worker.record_batch import Record, encode_batch, iter_batches

MAX = 1 << 20
PID = 4000
SMALL = LogConfig(segment_bytes=1024, index_interval_bytes=128)
NOW = 1_700_000_000_000


def produce(seq: int, n: int = 3, pid: int = PID, epoch: int = 0, ts: int = NOW, size: int = 40) -> bytearray:
    """A client batch of `n` records with sequences seq..seq+n-1."""
    records = [Record(i, ts + i, f"k{seq + i}".encode(), b"v" * size) for i in range(n)]
    return bytearray(encode_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq))


def append(log: PartitionLog, data: bytearray):
    return log.append(bytes(data), leader_epoch=0, max_batch_bytes=MAX)


def batch_count(log: PartitionLog) -> int:
    return sum(1 for s in log.segments for _ in s.iter_headers())


def open_log(path, config: LogConfig = SMALL) -> PartitionLog:
    return PartitionLog.open(path, config, now_ms=NOW)


def test_resent_batch_is_answered_with_first_offsets_and_written_once(tmp_path):
    log = open_log(tmp_path / "t-0")
    first = append(log, produce(0))
    append(log, produce(3))
    again = append(log, produce(0))
    assert again.duplicate and not first.duplicate
    assert (again.base_offset, again.last_offset) == (first.base_offset, first.last_offset) == (0, 2)
    assert log.log_end_offset == 6 and batch_count(log) == 2


def test_gap_and_stale_epoch_are_refused_and_write_nothing(tmp_path):
    log = open_log(tmp_path / "t-0")
    append(log, produce(0, epoch=1))
    size = log.size_bytes
    with pytest.raises(OutOfOrderSequenceError):
        append(log, produce(5, epoch=1))
    with pytest.raises(InvalidProducerEpochError):
        append(log, produce(3, epoch=0))
    assert log.log_end_offset == 3 and log.size_bytes == size


def test_five_in_flight_batches_each_deduplicated(tmp_path):
    log = open_log(tmp_path / "t-0")
    offsets = [append(log, produce(seq)).base_offset for seq in range(0, 15, 3)]
    for seq, offset in zip(range(0, 15, 3), offsets):
        again = append(log, produce(seq))
        assert again.duplicate and again.base_offset == offset
    assert log.log_end_offset == 15


def test_non_idempotent_batches_are_never_deduplicated(tmp_path):
    log = open_log(tmp_path / "t-0")
    plain = bytearray(encode_batch([Record(0, NOW, b"k", b"v")]))
    append(log, plain)
    assert not append(log, plain).duplicate
    assert log.log_end_offset == 2 and log.producer_state.producers == {}


def test_roll_writes_a_snapshot_at_the_new_segment_base(tmp_path):
    log = open_log(tmp_path / "t-0")
    seq = 0
    while len(log.segments) < 3:
        append(log, produce(seq, n=4))
        seq += 4
    snapshots = [offset for offset, _ in list_snapshots(log.directory)]
    assert snapshots == [s.base_offset for s in log.segments[1:]]


def test_clean_restart_loads_the_close_snapshot_without_replay(tmp_path, caplog):
    log = open_log(tmp_path / "t-0")
    for seq in range(0, 30, 3):
        append(log, produce(seq))
    end = log.log_end_offset
    log.close()
    assert (log.directory / snapshot_file_name(end)).exists()
    caplog.set_level("INFO")
    reopened = open_log(tmp_path / "t-0")
    assert "rebuilt producer state" not in caplog.text
    entry = reopened.producer_state.last_entry(PID)
    assert entry is not None and entry.last_seq == 29
    # The snapshot keeps the producer's batches, so a retry of the last one is recognised.
    again = append(reopened, produce(27))
    assert again.duplicate and again.base_offset == 27
    assert append(reopened, produce(30)).base_offset == end


def test_a_rest_keeps_the_five_batch_dedupe_window(tmp_path):
    # The replica rests (close) while a producer's five in-flight batches lost their answers;
    # after the wake (open) every retry gets its original offsets and nothing is written again.
    log = open_log(tmp_path / "t-0")
    append(log, produce(0))                               # acknowledged long ago
    in_flight = {seq: append(log, produce(seq)).base_offset for seq in range(3, 18, 3)}
    end = log.log_end_offset
    log.close()
    woken = open_log(tmp_path / "t-0")
    for seq, offset in in_flight.items():
        again = append(woken, produce(seq))
        assert again.duplicate and again.base_offset == offset
    with pytest.raises(OutOfOrderSequenceError):          # outside the window: Kafka's answer
        append(woken, produce(0))
    assert woken.log_end_offset == end and batch_count(woken) == 6
    assert append(woken, produce(18)).base_offset == end


def test_the_window_survives_a_roll_then_an_unclean_restart_for_each_producer(tmp_path):
    # Two producers interleaved across segment rolls; the process dies (no close): the newest
    # roll snapshot plus the replay after it give each producer its five batches back.
    log = open_log(tmp_path / "t-0")
    offsets: dict[tuple[int, int], int] = {}
    for seq in range(0, 60, 3):
        for pid in (PID, PID + 1):
            offsets[pid, seq] = append(log, produce(seq, pid=pid)).base_offset
    assert len(list_snapshots(log.directory)) >= 2
    log.flush()
    reopened = open_log(tmp_path / "t-0")
    for pid in (PID, PID + 1):
        for seq in range(45, 60, 3):
            again = append(reopened, produce(seq, pid=pid))
            assert again.duplicate and again.base_offset == offsets[pid, seq]
        with pytest.raises(OutOfOrderSequenceError):
            append(reopened, produce(42, pid=pid))


def test_unclean_restart_rebuilds_state_from_the_log(tmp_path):
    log = open_log(tmp_path / "t-0")
    for seq in range(0, 60, 3):
        append(log, produce(seq))
    log.flush()  # no close: no marker, and the newest batches are after the last snapshot
    reopened = open_log(tmp_path / "t-0")
    assert reopened.producer_state.last_entry(PID).last_seq == 59
    for seq in range(45, 60, 3):  # all five cached batches are found again from the log
        assert append(reopened, produce(seq)).duplicate
    with pytest.raises(OutOfOrderSequenceError):
        append(reopened, produce(61))


def test_snapshot_above_a_truncated_log_end_is_deleted_and_state_rebuilt(tmp_path):
    log = open_log(tmp_path / "t-0", LogConfig(segment_bytes=1 << 20))
    for seq in range(0, 12, 3):
        append(log, produce(seq))
    log.close()
    (log.directory / CLEAN_SHUTDOWN_FILE).unlink()  # pretend the close never finished
    segment = log.segments[-1].log_path
    with open(segment, "r+b") as f:  # cut into the last batch: offsets 9..11 are gone
        f.truncate(os.path.getsize(segment) - 5)
    reopened = open_log(tmp_path / "t-0")
    assert reopened.log_end_offset == 9
    assert [o for o, _ in list_snapshots(reopened.directory)] == [9]
    assert reopened.producer_state.last_entry(PID).last_seq == 8
    assert append(reopened, produce(9)).base_offset == 9  # the lost batch may be resent


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty"])
def test_corrupt_snapshot_is_ignored_and_state_rebuilt_from_the_log(tmp_path, damage):
    log = open_log(tmp_path / "t-0")
    for seq in range(0, 30, 3):
        append(log, produce(seq))
    log.close()
    snapshot = log.directory / snapshot_file_name(log.log_end_offset)
    data = bytearray(snapshot.read_bytes())
    if damage == "truncate":
        data = data[:len(data) // 2]
    elif damage == "flip":
        data[-3] ^= 0xFF
    else:
        data = bytearray()
    snapshot.write_bytes(bytes(data))
    reopened = open_log(tmp_path / "t-0")
    entry = reopened.producer_state.last_entry(PID)
    assert entry is not None and entry.last_seq == 29
    assert append(reopened, produce(27)).duplicate


def test_expired_producers_are_not_restored(tmp_path):
    config = LogConfig(producer_id_expiration_ms=60_000)
    log = PartitionLog.open(tmp_path / "t-0", config, now_ms=NOW)
    append(log, produce(0, ts=NOW))
    append(log, produce(0, pid=PID + 1, ts=NOW + 120_000))
    assert log.remove_expired_producers(NOW + 90_000) == [PID]
    log.flush()
    reopened = PartitionLog.open(tmp_path / "t-0", config, now_ms=NOW + 90_000)
    assert set(reopened.producer_state.producers) == {PID + 1}
    # A forgotten producer may go on with any sequence (KIP-360), and its batch is written.
    assert not append(reopened, produce(3)).duplicate


def test_duplicate_answer_keeps_bytes_on_disk_unchanged(tmp_path):
    log = open_log(tmp_path / "t-0")
    append(log, produce(0))
    before = log.read_bytes(log.read(0, MAX).regions[0])
    append(log, produce(0))
    after = log.read_bytes(log.read(0, MAX).regions[0])
    assert before == after and len(list(iter_batches(after))) == 1
