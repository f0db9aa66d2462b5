"""PartitionLog.append_as_follower: a follower copies the leader's batches byte for byte, builds
the same indexes and producer state, and refuses what does not continue its log (no Ray)."""
from __future__ import annotations

import dataclasses
import struct

import pytest

from rafka.common.errors import CorruptRecordError, InvalidRecordError, RecordBatchTooLargeError
from rafka.partition_worker.checkpoints import EpochEntry, LeaderEpochCache
from rafka.partition_worker.follower_append import (
    OffsetsOutOfOrderError, UnexpectedAppendOffsetError, check_follower_offsets,
)
from rafka.partition_worker.producer_state import OutOfOrderSequenceError
from rafka.partition_worker.record_batch import (
    MAGIC_OFFSET, Compression, Record, TimestampType, encode_batch, iter_batches, parse_header,
)
from tests.unit.storage.replica_logs import (
    MAX, NOW, ROLL_ON, ROLLING, append_all, client_batch, first_at_or_after, log_files, producer_state,
    open_log, records_by_offset, replicate, snapshot_files, workload,
)
from tests.unit.storage.replica_logs import close_logs  # noqa: F401 (the fixture closing every log opened)


def leader_epoch_of(count: int):
    """Epoch 1 for the first third of the batches, 2 for the second, 5 after."""
    return lambda n: 1 if n < count // 3 else (2 if n < 2 * count // 3 else 5)


@pytest.mark.parametrize("rule", list(ROLL_ON))
@pytest.mark.parametrize("timestamp_type", ["CreateTime", "LogAppendTime"])
def test_follower_copies_the_leader_byte_for_byte_and_dedups_after_becoming_leader(tmp_path, timestamp_type, rule):
    config = dataclasses.replace(ROLL_ON[rule], message_timestamp_type=timestamp_type)
    leader = open_log(tmp_path / "leader" / "t-0", config)
    follower = open_log(tmp_path / "follower" / "t-0", config)
    batches = workload(240)
    leader_epochs = LeaderEpochCache(tmp_path / "leader")
    infos = append_all(leader, batches, leader_epochs, leader_epoch=leader_epoch_of(len(batches)))
    assert len(leader.segments) >= 5
    follower_epochs = LeaderEpochCache(tmp_path / "follower")
    replicate(leader, follower, fetch_bytes=700, epochs=follower_epochs, now_ms=NOW + 10**9)

    assert follower.log_end_offset == leader.log_end_offset
    assert log_files(follower) == log_files(leader)  # same segment boundaries, same bytes
    assert follower_epochs.entries == leader_epochs.entries == (
        EpochEntry(1, 0), EpochEntry(2, infos[80].base_offset), EpochEntry(5, infos[160].base_offset))
    if timestamp_type == "LogAppendTime":
        stamped = [h for s in follower.segments for h in iter_batches(s.log_path.read_bytes())]
        assert all(h.timestamp_type == TimestampType.LOG_APPEND_TIME for h in stamped)
        assert [h.max_timestamp for h in stamped] == [NOW + 1500 * n for n in range(len(batches))]
    for lead, follow in zip(leader.segments, follower.segments):
        assert follow.index.entries() == lead.index.entries()
        assert follow.time_index.entries() == lead.time_index.entries()
        assert (follow.max_timestamp, follow.offset_of_max_timestamp) == (lead.max_timestamp,
                                                                          lead.offset_of_max_timestamp)
    records = records_by_offset(leader)
    for offset in range(0, leader.log_end_offset, 7):
        assert ([leader.read_bytes(r) for r in leader.read(offset, 900).regions]
                == [follower.read_bytes(r) for r in follower.read(offset, 900).regions])
    for ts in range(NOW - 1, NOW + 1500 * len(batches) + 2, 2111):
        assert follower.offset_for_timestamp(ts) == leader.offset_for_timestamp(ts) == first_at_or_after(records, ts)
    assert follower.max_timestamp_offset() == leader.max_timestamp_offset()
    assert producer_state(follower) == producer_state(leader)
    assert snapshot_files(follower.directory) == snapshot_files(leader.directory)  # written at the same rolls

    # The follower becomes leader (epoch 6): a retry of any of a producer's last five batches is
    # answered with the offsets the old leader gave it, and the sequence checks are the old leader's.
    for n in (239, 223, 237, 228):  # last and fifth-last of 7003, last of 7002 (epoch 1), third-last of 7001
        assert batches[n].producer_id >= 0
        again = follower.append(bytearray(batches[n].data), leader_epoch=6, max_batch_bytes=MAX, now_ms=NOW + 10**9)
        assert again.duplicate and (again.base_offset, again.last_offset) == (infos[n].base_offset,
                                                                              infos[n].last_offset)
    last = batches[-4]  # producer 7001, epoch 0
    assert last.producer_id == 7001
    with pytest.raises(OutOfOrderSequenceError):
        follower.append(bytearray(client_batch(999, producer_id=7001, producer_epoch=0,
                                               base_sequence=last.base_sequence + last.records + 1).data),
                        leader_epoch=6, max_batch_bytes=MAX, now_ms=NOW + 10**9)
    end = follower.log_end_offset
    info = follower.append(bytearray(client_batch(999, producer_id=7001, producer_epoch=0,
                                                  base_sequence=last.base_sequence + last.records).data),
                           leader_epoch=6, max_batch_bytes=MAX, now_ms=NOW + 10**9)
    assert not info.duplicate and info.base_offset == end


def test_follower_state_survives_a_restart_like_the_leaders(tmp_path):
    leader = open_log(tmp_path / "leader" / "t-0", ROLLING)
    follower = open_log(tmp_path / "follower" / "t-0", ROLLING)
    append_all(leader, workload(60), LeaderEpochCache(tmp_path / "leader"), leader_epoch=lambda n: 3)
    replicate(leader, follower, fetch_bytes=5000)
    follower.close()
    leader.close()
    leader = open_log(tmp_path / "leader" / "t-0", ROLLING)
    follower = open_log(tmp_path / "follower" / "t-0", ROLLING)
    assert log_files(follower) == log_files(leader)
    assert producer_state(follower) == producer_state(leader)


def test_each_batch_rolls_by_the_leaders_rules_even_inside_one_fetch(tmp_path):
    """One fetch spanning several of the leader's segments is split at the same places."""
    leader = open_log(tmp_path / "leader" / "t-0", ROLLING)
    follower = open_log(tmp_path / "follower" / "t-0", ROLLING)
    append_all(leader, workload(120), LeaderEpochCache(tmp_path / "leader"), leader_epoch=lambda n: 0)
    data = b"".join(s.log_path.read_bytes() for s in leader.segments)
    info = follower.append_as_follower(data, now_ms=NOW)
    assert (info.base_offset, info.last_offset, info.batch_count) == (0, leader.log_end_offset - 1, 120)
    assert info.epoch_starts == (EpochEntry(0, 0),)
    assert [s.base_offset for s in follower.segments] == [s.base_offset for s in leader.segments]
    assert log_files(follower) == log_files(leader)


def test_time_roll_follows_the_stored_log_append_time(tmp_path):
    """Client timestamps stand still while the append time moves: the leader must roll on the
    append time, as Kafka, for its follower (which only sees the stored bytes) to roll alike."""
    config = dataclasses.replace(ROLL_ON["time"], message_timestamp_type="LogAppendTime")
    leader = open_log(tmp_path / "leader" / "t-0", config)
    follower = open_log(tmp_path / "follower" / "t-0", config)
    for n in range(60):
        leader.append(bytearray(client_batch(n, ts=NOW).data), leader_epoch=0, max_batch_bytes=MAX,
                      now_ms=NOW + 1500 * n)
    assert len(leader.segments) == 3  # 40 s of append time per segment
    replicate(leader, follower, fetch_bytes=1 << 20)
    assert log_files(follower) == log_files(leader)


def test_compacted_log_takes_the_leaders_gaps(tmp_path):
    follower = open_log(tmp_path / "t-0", dataclasses.replace(ROLLING, cleanup_policy=("compact",)))
    data = (encode_batch([Record(5, NOW, b"a", b"1")], base_offset=5, partition_leader_epoch=2)
            + encode_batch([Record(9, NOW, b"b", b"2")], base_offset=8, partition_leader_epoch=2))
    info = follower.append_as_follower(data, now_ms=NOW)
    assert (info.base_offset, info.last_offset, follower.log_end_offset) == (5, 9, 10)
    assert info.epoch_starts == (EpochEntry(2, 5),)
    with pytest.raises(UnexpectedAppendOffsetError):
        follower.append_as_follower(encode_batch([Record(9, NOW, b"c", b"3")], base_offset=9), now_ms=NOW)


def test_empty_append_writes_nothing(tmp_path):
    log = open_log(tmp_path / "t-0", ROLLING)
    info = log.append_as_follower(b"", now_ms=NOW)
    assert info.batch_count == 0 and info.base_offset == 0 and log.log_end_offset == 0 and log.size_bytes == 0


# -- refusals -------------------------------------------------------------------------------
def _leader_bytes(base_offset: int, count: int, epoch: int = 1, producer_id: int = -1, sequence: int = -1) -> bytes:
    """`count` one-record batches from `base_offset` on, as stored by a leader."""
    return b"".join(encode_batch([Record(base_offset + i, NOW + i, b"k", b"v" * 20)], base_offset=base_offset + i,
                                 partition_leader_epoch=epoch, producer_id=producer_id, producer_epoch=0,
                                 base_sequence=sequence + i if sequence >= 0 else -1)
                    for i in range(count))


def _corrupt(data: bytes, at: int) -> bytes:
    out = bytearray(data)
    out[at] ^= 0xFF
    return bytes(out)


def _second_batch_at(data: bytes) -> int:
    return next(iter(iter_batches(data))).size


REFUSALS = {
    "gap": (lambda: _leader_bytes(12, 2), UnexpectedAppendOffsetError),
    "overlap": (lambda: _leader_bytes(9, 2), UnexpectedAppendOffsetError),
    "far-below": (lambda: _leader_bytes(0, 3), UnexpectedAppendOffsetError),
    "gap-between-batches": (lambda: _leader_bytes(10, 1) + _leader_bytes(12, 1), OffsetsOutOfOrderError),
    "repeat-inside": (lambda: _leader_bytes(10, 2) + _leader_bytes(11, 1), OffsetsOutOfOrderError),
    "bad-crc": (lambda: _corrupt(_leader_bytes(10, 1), 70), CorruptRecordError),
    "bad-crc-in-a-later-batch": (lambda: _corrupt(_leader_bytes(10, 3), 2 * _second_batch_at(_leader_bytes(10, 1)) + 70),
                                 CorruptRecordError),
    "cut-short": (lambda: _leader_bytes(10, 2)[:-5], CorruptRecordError),
    "short-length": (lambda: _leader_bytes(10, 1)[:8] + struct.pack(">i", 20) + _leader_bytes(10, 1)[12:],
                     CorruptRecordError),
    "magic-1": (lambda: _corrupt(_leader_bytes(10, 1), MAGIC_OFFSET), InvalidRecordError),
}


@pytest.mark.parametrize("case", list(REFUSALS), ids=list(REFUSALS))
def test_refused_append_changes_nothing(tmp_path, case):
    make, error = REFUSALS[case]
    log = open_log(tmp_path / "t-0", dataclasses.replace(ROLLING, segment_bytes=700))
    log.append_as_follower(_leader_bytes(0, 10, producer_id=50, sequence=0), now_ms=NOW)
    before = (log.log_end_offset, log_files(log), producer_state(log), snapshot_files(log.directory),
              [s.index.entries() for s in log.segments], log.size_bytes)
    with pytest.raises(error):
        log.append_as_follower(make(), now_ms=NOW)
    assert before == (log.log_end_offset, log_files(log), producer_state(log), snapshot_files(log.directory),
                      [s.index.entries() for s in log.segments], log.size_bytes)
    assert log.append_as_follower(_leader_bytes(10, 2), now_ms=NOW).base_offset == 10  # and it still appends


def test_unexpected_offset_error_carries_the_appends_offsets(tmp_path):
    log = open_log(tmp_path / "t-0", ROLLING)
    log.truncate_fully_and_start_at(100, now_ms=NOW)
    with pytest.raises(UnexpectedAppendOffsetError) as refused:
        log.append_as_follower(encode_batch([Record(98 + i, NOW, b"k", b"v") for i in range(5)], base_offset=98))
    assert (refused.value.first_offset, refused.value.last_offset) == (98, 102)
    # What Kafka's Partition does with it: start the log at the batch's base offset and append again.
    log.truncate_fully_and_start_at(refused.value.first_offset, now_ms=NOW)
    assert log.append_as_follower(encode_batch([Record(98 + i, NOW, b"k", b"v") for i in range(5)],
                                               base_offset=98)).last_offset == 102


def test_batch_larger_than_a_segment_is_refused_before_writing(tmp_path):
    log = open_log(tmp_path / "t-0", dataclasses.replace(ROLLING, segment_bytes=300))
    data = _leader_bytes(0, 1) + encode_batch([Record(1, NOW, b"k", b"v" * 400)], base_offset=1)
    with pytest.raises(RecordBatchTooLargeError):
        log.append_as_follower(data, now_ms=NOW)
    assert log.log_end_offset == 0 and log.size_bytes == 0


def test_follower_does_not_check_sequences_but_keeps_the_bookkeeping(tmp_path):
    """A sequence gap or a lower producer epoch from the leader is stored (Kafka's
    AppendOrigin.REPLICATION); the entry follows the batches as on any replay."""
    log = open_log(tmp_path / "t-0", ROLLING)
    log.append_as_follower(_leader_bytes(0, 2, producer_id=9, sequence=0), now_ms=NOW)
    log.append_as_follower(_leader_bytes(2, 1, producer_id=9, sequence=40), now_ms=NOW)  # a gap: taken
    entry = log.producer_state.producers[9]
    assert [(b.first_seq, b.first_offset) for b in entry.batches] == [(0, 0), (1, 1), (40, 2)]


# -- the pure check ----------------------------------------------------------------------------
def _headers(*spans: tuple[int, int, int]):
    """Headers of batches (base offset, record count, partition leader epoch)."""
    data = b"".join(encode_batch([Record(base + i, NOW, None, b"v") for i in range(n)], base_offset=base,
                                 partition_leader_epoch=epoch) for base, n, epoch in spans)
    return [parse_header(data, h.position) for h in iter_batches(data)]


def test_epoch_starts_name_the_first_batch_of_each_epoch():
    headers = _headers((10, 2, 3), (12, 1, 3), (13, 4, -1), (17, 1, 4), (18, 1, 4), (19, 2, 6))
    assert check_follower_offsets(headers, 10, allow_gaps=False, partition="t-0") == (
        EpochEntry(3, 10), EpochEntry(4, 17), EpochEntry(6, 19))
    assert check_follower_offsets([], 10, allow_gaps=False, partition="t-0") == ()


def test_negative_last_offset_delta_is_corrupt():
    h = dataclasses.replace(_headers((10, 2, 3))[0], last_offset_delta=-1)
    with pytest.raises(CorruptRecordError):
        check_follower_offsets([h], 10, allow_gaps=True, partition="t-0")


def test_compressed_batches_keep_their_codec(tmp_path):
    log = open_log(tmp_path / "t-0", ROLLING)
    data = b"".join(encode_batch([Record(i * 2 + k, NOW, b"k", b"v" * 50) for k in range(2)], base_offset=i * 2,
                                 compression=Compression(i % 5), partition_leader_epoch=1) for i in range(5))
    log.append_as_follower(data, now_ms=NOW)
    assert b"".join(s.log_path.read_bytes() for s in log.segments) == data
