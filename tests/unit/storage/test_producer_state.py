"""ProducerStateManager: Kafka 3.9's idempotent-producer rules, expiry, truncation, snapshots."""
from __future__ import annotations

import logging
import struct

import crc32c
import pytest
from rafka.partition_worker.producer_state import (
    APPEND,
    DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    INT32_MAX,
    AppendCheck,
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
    ProducerStateManager,
    decrement_sequence,
    increment_sequence,
    list_snapshots,
    snapshot_file_name,
)
from rafka.partition_worker.record_batch import BatchHeader

from rafka.common.errors import ErrorCode, KafkaError

PID = 1000


def header(seq: int, count: int = 1, pid: int = PID, epoch: int = 0, ts: int = 1_000,
           base_offset: int = 0) -> BatchHeader:
    """A batch header of `count` records starting at sequence `seq`."""
    return BatchHeader(base_offset=base_offset, batch_length=100, partition_leader_epoch=0, magic=2,
                       crc=0, attributes=0, last_offset_delta=count - 1, base_timestamp=ts,
                       max_timestamp=ts, producer_id=pid, producer_epoch=epoch,
                       base_sequence=seq, records_count=count)


class Log:
    """The broker's side of the contract: check, write at the log end, update."""

    def __init__(self, state: ProducerStateManager | None = None) -> None:
        self.state = state or ProducerStateManager()
        self.end_offset = 0

    def produce(self, h: BatchHeader) -> tuple[int, int]:
        check = self.state.check_append(h)
        if check.is_duplicate:
            return check.first_offset, check.last_offset
        first = self.end_offset
        self.end_offset += h.last_offset_delta + 1
        self.state.update(h, first)
        return first, first + h.last_offset_delta


def produce_five(log: Log) -> list[tuple[int, int]]:
    """Batches of 2 records at sequences 0,2,4,6,8; returns their offsets."""
    return [log.produce(header(seq, count=2)) for seq in range(0, 10, 2)]


def test_in_order_sequences_append():
    log = Log()
    assert produce_five(log) == [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9)]
    entry = log.state.last_entry(PID)
    assert entry.producer_epoch == 0 and entry.last_seq == 9 and entry.last_data_offset == 9
    assert len(entry.batches) == 5


def test_first_batch_of_unknown_producer_at_zero_appends():
    assert ProducerStateManager().check_append(header(0)) is APPEND


def test_unknown_producer_with_nonzero_sequence_is_accepted_since_kip_360():
    # Kafka >= 2.5 accepts any first sequence from a producer id with no state.
    state = ProducerStateManager()
    assert state.check_append(header(42)) is APPEND
    state.update(header(42), 0)
    assert state.check_append(header(43)) is APPEND


@pytest.mark.parametrize("index", range(5))
def test_retry_of_each_of_last_five_batches_returns_original_offsets(index):
    log = Log()
    offsets = produce_five(log)
    check = log.state.check_append(header(index * 2, count=2))
    assert check == AppendCheck.duplicate(*offsets[index])
    assert log.produce(header(index * 2, count=2)) == offsets[index]
    assert log.end_offset == 10  # nothing appended


def test_retry_older_than_the_five_cached_batches_is_out_of_order():
    log = Log()
    log.produce(header(0, count=2))
    produce_five_more = [log.produce(header(seq, count=2)) for seq in range(2, 12, 2)]
    assert len(produce_five_more) == 5
    with pytest.raises(OutOfOrderSequenceError) as err:
        log.state.check_append(header(0, count=2))
    assert err.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert err.value.code != ErrorCode.DUPLICATE_SEQUENCE_NUMBER


def test_same_first_sequence_but_different_range_is_not_a_duplicate():
    log = Log()
    produce_five(log)
    with pytest.raises(OutOfOrderSequenceError):
        log.state.check_append(header(4, count=3))


def test_sequence_gap_is_out_of_order():
    log = Log()
    produce_five(log)
    with pytest.raises(OutOfOrderSequenceError) as err:
        log.state.check_append(header(11))
    assert isinstance(err.value, KafkaError)
    assert err.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_stale_epoch_is_invalid_producer_epoch():
    log = Log()
    log.produce(header(0, epoch=3))
    with pytest.raises(InvalidProducerEpochError) as err:
        log.state.check_append(header(1, epoch=2))
    assert err.value.code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_stale_epoch_retry_of_a_cached_sequence_range_is_not_a_duplicate():
    log = Log()
    log.produce(header(0, epoch=3))
    with pytest.raises(InvalidProducerEpochError):
        log.state.check_append(header(0, epoch=2))


def test_epoch_bump_must_start_at_sequence_zero():
    log = Log()
    produce_five(log)
    with pytest.raises(OutOfOrderSequenceError):
        log.state.check_append(header(10, epoch=1))
    assert log.state.check_append(header(0, epoch=1)) is APPEND


def test_epoch_bump_clears_cached_batches():
    log = Log()
    produce_five(log)
    assert log.produce(header(0, count=2, epoch=1)) == (10, 11)
    entry = log.state.last_entry(PID)
    assert entry.producer_epoch == 1 and len(entry.batches) == 1
    # the old epoch's batch is no longer a duplicate: its epoch is stale now
    with pytest.raises(InvalidProducerEpochError):
        log.state.check_append(header(2, count=2, epoch=0))


def test_sequence_wraps_from_int32_max_to_zero():
    assert increment_sequence(INT32_MAX, 1) == 0
    assert increment_sequence(INT32_MAX - 1, 3) == 1
    assert decrement_sequence(1, 3) == INT32_MAX - 1
    log = Log()
    log.produce(header(INT32_MAX - 1, count=2))          # last_seq = INT32_MAX
    assert log.state.last_entry(PID).last_seq == INT32_MAX
    assert log.produce(header(0, count=3)) == (2, 4)      # wraps
    # a batch spanning the wrap: first INT32_MAX - 1, last 1
    log2 = Log()
    log2.produce(header(INT32_MAX - 1, count=4))
    assert log2.state.last_entry(PID).last_seq == 1
    assert log2.state.check_append(header(INT32_MAX - 1, count=4)) == AppendCheck.duplicate(0, 3)
    assert log2.state.check_append(header(2)) is APPEND
    with pytest.raises(OutOfOrderSequenceError):
        log2.state.check_append(header(0))


def test_batches_without_producer_id_are_not_tracked():
    log = Log()
    plain = header(-1, count=3, pid=-1, epoch=-1)
    assert log.state.check_append(plain) is APPEND
    assert log.produce(plain) == (0, 2)
    assert log.produce(plain) == (3, 5)  # never a duplicate
    assert log.state.producers == {}


def test_producers_are_independent():
    log = Log()
    log.produce(header(0, pid=1))
    log.produce(header(0, pid=2))
    assert log.state.check_append(header(1, pid=1)) is APPEND
    assert log.state.check_append(header(0, pid=2)) == AppendCheck.duplicate(1, 1)


def test_expired_producers_are_removed():
    log = Log()
    log.produce(header(0, pid=1, ts=1_000))
    log.produce(header(0, pid=2, ts=5_000))
    assert log.state.remove_expired(now_ms=1_000 + 3_999, expiration_ms=4_000) == []
    assert log.state.remove_expired(now_ms=1_000 + 4_000, expiration_ms=4_000) == [1]
    assert set(log.state.producers) == {2}
    # after expiry the producer is unknown again: any sequence is accepted
    assert log.state.check_append(header(7, pid=1)) is APPEND


def test_expiration_defaults_to_producer_id_expiration_ms():
    state = ProducerStateManager()
    state.update(header(0, ts=0), 0)
    assert state.remove_expired(DEFAULT_PRODUCER_ID_EXPIRATION_MS - 1) == []
    assert state.remove_expired(DEFAULT_PRODUCER_ID_EXPIRATION_MS) == [PID]


def test_truncate_fully_forgets_producers_and_snapshots(tmp_path):
    log = Log()
    produce_five(log)
    log.state.write_snapshot(tmp_path, 10)
    log.state.truncate_fully(tmp_path)
    assert log.state.producers == {}
    assert list_snapshots(tmp_path) == []


def test_log_start_offset_drops_producers_whose_last_batch_is_below_it():
    log = Log()
    log.produce(header(0, pid=1))          # offset 0
    log.produce(header(0, count=3, pid=2))  # offsets 1..3
    assert log.state.on_log_start_offset(3) == [1]
    assert set(log.state.producers) == {2}
    assert log.state.on_log_start_offset(4) == [2]


def test_snapshot_round_trip_keeps_the_last_five_batches_of_each_producer(tmp_path):
    log = Log()
    log.produce(header(0, count=2))                      # sequences 0-1: falls out of the window
    offsets = [log.produce(header(seq, count=2)) for seq in range(2, 12, 2)]
    log.produce(header(0, count=3, pid=7, epoch=4, ts=9_999))
    path = log.state.write_snapshot(tmp_path, log.end_offset)
    assert path.name == "00000000000000000015.snapshot" == snapshot_file_name(15)

    loaded = ProducerStateManager()
    assert loaded.load_latest_snapshot(tmp_path) == 15
    assert set(loaded.producers) == {PID, 7}
    for pid in (PID, 7):
        before, after = log.state.last_entry(pid), loaded.last_entry(pid)
        assert after.producer_epoch == before.producer_epoch
        assert after.last_timestamp == before.last_timestamp
        assert after.coordinator_epoch == before.coordinator_epoch
        assert list(after.batches) == list(before.batches)
    assert loaded.encode_snapshot() == log.state.encode_snapshot()

    # A retry of any of the five in-flight batches is known again after a rest and a wake...
    for seq, (first, last) in zip(range(2, 12, 2), offsets):
        assert loaded.check_append(header(seq, count=2)) == AppendCheck.duplicate(first, last)
    # ...and one older than the window gets what Kafka answers.
    with pytest.raises(OutOfOrderSequenceError):
        loaded.check_append(header(0, count=2))
    assert loaded.check_append(header(12)) is APPEND
    assert loaded.check_append(header(3, pid=7, epoch=4)) is APPEND


def kafka_load(data: bytes, now_ms: int | None = None, expiration_ms: int = 1_000) -> dict[int, tuple]:
    """What Kafka 3.9's `loadFromSnapshot` keeps of a snapshot: `readSnapshot`'s entries in
    file order, those not expired (per entry), put into a map by producer id (last wins)."""
    kept = {}
    for entry in ProducerStateManager.decode_snapshot(data):
        if now_ms is None or now_ms - entry.last_timestamp < expiration_ms:
            kept[entry.producer_id] = (entry.producer_epoch, entry.last_seq, entry.last_data_offset,
                                       entry.last_timestamp)
    return kept


def test_kafka_reading_a_rafka_snapshot_keeps_each_producers_newest_batch():
    log = Log()
    produce_five(log)
    log.produce(header(0, count=3, pid=7, epoch=4, ts=9_999))
    data = log.state.encode_snapshot()
    assert struct.unpack_from(">hIi", data, 0)[2] == 6          # five entries of PID, one of 7
    assert kafka_load(data) == {PID: (0, 9, 9, 1_000), 7: (4, 2, 12, 9_999)}


def test_an_older_entry_never_outlives_the_newest_under_kafkas_expiry(tmp_path):
    # CreateTime is the client's: an older batch may carry a later timestamp than the newest.
    state = ProducerStateManager(producer_id_expiration_ms=1_000)
    state.update(header(0, ts=5_000), first_offset=0)
    state.update(header(1, ts=2_000), first_offset=1)
    data = state.write_snapshot(tmp_path, 2).read_bytes()
    assert kafka_load(data, now_ms=2_500) == {PID: (0, 1, 1, 2_000)}
    assert kafka_load(data, now_ms=3_500) == {}                # not the older batch alone
    loaded = ProducerStateManager(producer_id_expiration_ms=1_000)
    assert loaded.load_latest_snapshot(tmp_path, now_ms=2_500) == 2
    assert [b.first_offset for b in loaded.last_entry(PID).batches] == [0, 1]
    assert loaded.last_entry(PID).last_timestamp == 2_000
    assert loaded.load_latest_snapshot(tmp_path, now_ms=3_500) == 2 and loaded.producers == {}


def test_kafka_written_snapshot_loads_one_batch_per_producer(tmp_path):
    # Kafka writes each producer's last batch only: that one is a duplicate, older retries are not.
    (tmp_path / snapshot_file_name(10)).write_bytes(snapshot_of((PID, 0, 9, 9, 1, 1_000, -1, -1)))
    loaded = ProducerStateManager()
    assert loaded.load_latest_snapshot(tmp_path) == 10
    assert loaded.check_append(header(8, count=2)) == AppendCheck.duplicate(8, 9)
    with pytest.raises(OutOfOrderSequenceError):
        loaded.check_append(header(6, count=2))


def snapshot_of(*rows: tuple) -> bytes:
    """Kafka's v1 snapshot bytes holding `rows` (pid, epoch, last_seq, last_offset,
    offset_delta, timestamp, coordinator_epoch, txn_first_offset) in this order."""
    body = struct.pack(">i", len(rows)) + b"".join(struct.pack(">qhiqiqiq", *row) for row in rows)
    return struct.pack(">hI", 1, crc32c.crc32c(body)) + body


def test_a_new_epoch_or_a_non_increasing_offset_starts_a_producer_afresh():
    epoch1 = [(PID, 1, 0, 0, 0, 10, -1, -1), (PID, 1, 1, 1, 0, 11, -1, -1)]
    # epoch 2 after epoch 1: only the epoch 2 batch
    merged = ProducerStateManager.decode_producers(snapshot_of(*epoch1, (PID, 2, 0, 2, 0, 12, -1, -1)))[PID]
    assert merged.producer_epoch == 2 and [b.first_offset for b in merged.batches] == [2]
    assert merged.last_timestamp == 12
    # the same batches twice in a row: the second run is not above the first, so it replaces it
    again = ProducerStateManager.decode_producers(snapshot_of(*epoch1, *epoch1))[PID]
    assert [b.first_offset for b in again.batches] == [0, 1]
    # an entry without batch metadata (last offset -1) ends up with no batches
    empty = ProducerStateManager.decode_producers(snapshot_of(*epoch1, (PID, 1, -1, -1, 0, 13, -1, -1)))[PID]
    assert empty.is_empty and empty.producer_epoch == 1
    # more than five entries of one producer: the last five are kept
    many = [(PID, 0, i, i, 0, i, -1, -1) for i in range(8)]
    assert [b.first_offset for b in ProducerStateManager.decode_producers(snapshot_of(*many))[PID].batches] == [3, 4, 5, 6, 7]


def test_snapshot_layout_is_kafkas_v1(tmp_path):
    state = ProducerStateManager()
    state.update(header(5, count=2, pid=42, epoch=3, ts=777), first_offset=100)
    data = state.write_snapshot(tmp_path, 102).read_bytes()
    version, crc, count = struct.unpack_from(">hIi", data, 0)
    assert (version, count) == (1, 1)
    assert crc == crc32c.crc32c(data[6:])
    assert struct.unpack_from(">qhiqiqiq", data, 10) == (42, 3, 6, 101, 1, 777, -1, -1)
    assert len(data) == 10 + 46


def test_empty_state_snapshot_round_trips(tmp_path):
    ProducerStateManager().write_snapshot(tmp_path, 0)
    loaded = ProducerStateManager()
    assert loaded.load_latest_snapshot(tmp_path) == 0
    assert loaded.producers == {}


def test_no_snapshot_loads_nothing(tmp_path):
    state = ProducerStateManager()
    state.update(header(0), 0)
    assert state.load_latest_snapshot(tmp_path) is None
    assert state.load_latest_snapshot(tmp_path / "missing") is None
    assert state.producers == {}


def two_snapshots(tmp_path) -> Log:
    log = Log()
    log.produce(header(0))
    log.state.write_snapshot(tmp_path, 1)
    log.produce(header(1))
    log.state.write_snapshot(tmp_path, 2)
    return log


def test_truncated_snapshot_falls_back_to_older_one(tmp_path, caplog):
    two_snapshots(tmp_path)
    newest = tmp_path / snapshot_file_name(2)
    newest.write_bytes(newest.read_bytes()[:-5])
    loaded = ProducerStateManager()
    with caplog.at_level(logging.WARNING):
        assert loaded.load_latest_snapshot(tmp_path) == 1
    assert loaded.last_entry(PID).last_seq == 0
    assert "Failed to load producer snapshot" in caplog.text


@pytest.mark.parametrize("position", [0, 1, 3, 7, 12, 30, -1], ids=lambda p: f"byte{p}")
def test_flipped_byte_falls_back_to_older_snapshot(tmp_path, position):
    two_snapshots(tmp_path)
    newest = tmp_path / snapshot_file_name(2)
    data = bytearray(newest.read_bytes())
    data[position] ^= 0x01
    newest.write_bytes(bytes(data))
    loaded = ProducerStateManager()
    assert loaded.load_latest_snapshot(tmp_path) == 1
    assert loaded.last_entry(PID).last_seq == 0


@pytest.mark.parametrize("content", [b"", b"\x00", b"\x00\x01\x00\x00"], ids=["empty", "1-byte", "4-bytes"])
def test_only_snapshot_corrupt_gives_none(tmp_path, content):
    (tmp_path / snapshot_file_name(5)).write_bytes(content)
    state = ProducerStateManager()
    assert state.load_latest_snapshot(tmp_path) is None
    assert state.producers == {}


def test_snapshot_with_extra_entry_count_is_refused(tmp_path):
    state = ProducerStateManager()
    state.update(header(0), 0)
    data = bytearray(state.encode_snapshot())
    struct.pack_into(">i", data, 6, 2)                        # claims two entries
    struct.pack_into(">I", data, 2, crc32c.crc32c(bytes(data[6:])))  # with a valid CRC
    (tmp_path / snapshot_file_name(1)).write_bytes(bytes(data))
    assert ProducerStateManager().load_latest_snapshot(tmp_path) is None


def test_load_skips_expired_producers_when_given_time(tmp_path):
    state = ProducerStateManager(producer_id_expiration_ms=1_000)
    state.update(header(0, pid=1, ts=0), 0)
    state.update(header(0, pid=2, ts=5_000), 1)
    state.write_snapshot(tmp_path, 2)
    loaded = ProducerStateManager(producer_id_expiration_ms=1_000)
    assert loaded.load_latest_snapshot(tmp_path, now_ms=5_500) == 2
    assert set(loaded.producers) == {2}


def test_delete_snapshots_before_is_exclusive(tmp_path):
    state = ProducerStateManager()
    for offset in (0, 5, 10):
        state.write_snapshot(tmp_path, offset)
    (tmp_path / "00000000000000000003.index").write_bytes(b"")
    assert ProducerStateManager.delete_snapshots_before(tmp_path, 10) == [0, 5]
    assert [offset for offset, _ in list_snapshots(tmp_path)] == [10]
    assert (tmp_path / "00000000000000000003.index").exists()
