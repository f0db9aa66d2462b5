"""How the group coordinator uses `__consumer_offsets` (offsets_topic.py): the records each write
makes, the batch written and replayed (transactions resolved), and the group -> partition hash."""
from __future__ import annotations

import struct

import pytest
from rafka.coordinator.group import offsets_records as rec
from rafka.coordinator.group import offsets_topic as topic
from rafka.coordinator.group.group_messages import CommittedOffset, GroupSnapshot, MemberSnapshot
from rafka.coordinator.group.offsets_records import OffsetsRecordError
from rafka.partition_worker.record_batch import Record, decode_records, encode_batch

from rafka.common.errors import CorruptRecordError

OFFSET = CommittedOffset(offset=42, leader_epoch=7, metadata="meta", commit_timestamp_ms=1_700_000_000_000)
GROUP = GroupSnapshot(group_id="g1", protocol_type="consumer", generation_id=5, protocol_name="range",
                      leader_id="c-1", current_state_timestamp_ms=1_700_000_000_123,
                      members=(MemberSnapshot("c-1", None, "c-1", "/10.0.0.1", 300_000, 45_000, b"sub", b"asg"),))


# -- records, batches, replay ----------------------------------------------------------------------

def test_records_for_commit_pair_each_key_with_its_value():
    offsets = {("t", 0): OFFSET, ("u", 3): CommittedOffset(7)}
    pairs = topic.records_for_commit("g1", offsets)
    assert pairs == [(rec.offset_commit_key("g1", "t", 0), rec.offset_commit_value(OFFSET)),
                     (rec.offset_commit_key("g1", "u", 3), rec.offset_commit_value(CommittedOffset(7)))]


def test_records_for_group_and_tombstones():
    assert topic.records_for_group(GROUP) == [(rec.group_metadata_key("g1"), rec.group_metadata_value(GROUP))]
    assert topic.group_tombstone("g1") == (rec.group_metadata_key("g1"), None)
    assert topic.offset_tombstone("g1", "t", 2) == (rec.offset_commit_key("g1", "t", 2), None)
    assert topic.offset_tombstones("g1", [("t", 0), ("t", 1)]) == [
        (rec.offset_commit_key("g1", "t", 0), None), (rec.offset_commit_key("g1", "t", 1), None)]


def test_offsets_batch_is_one_uncompressed_create_time_batch_without_producer():
    pairs = topic.records_for_commit("g1", {("t", 0): OFFSET}) + [topic.group_tombstone("g1")]
    batch = topic.encode_offsets_batch(pairs, timestamp_ms=1234)
    header, records = decode_records(batch)
    assert (header.base_offset, header.compression, header.timestamp_type, header.producer_id) == (0, 0, 0, -1)
    assert not header.is_transactional and not header.is_control
    assert [(r.offset, r.timestamp, r.key, r.value) for r in records] == [
        (0, 1234, pairs[0][0], pairs[0][1]), (1, 1234, pairs[1][0], None)]


def test_empty_offsets_batch_is_refused():
    with pytest.raises(ValueError):
        topic.encode_offsets_batch([], 0)


def test_replay_yields_the_records_of_concatenated_batches_in_order():
    first = topic.records_for_commit("g1", {("t", 0): OFFSET, ("t", 1): CommittedOffset(3)})
    second = topic.records_for_group(GROUP) + [topic.offset_tombstone("g1", "t", 1)]
    log = _at(topic.encode_offsets_batch(first, 10), 0) + _at(topic.encode_offsets_batch(second, 20), 2)
    assert list(topic.replay(log)) == first + second
    assert list(topic.replay(memoryview(log))) == first + second


def test_replay_skips_control_batches_and_ignores_a_trailing_partial_batch():
    plain = topic.records_for_commit("g1", {("t", 0): OFFSET})
    log = _at(topic.encode_offsets_batch(plain, 10), 0) + _marker(pid=-1, commit=True, offset=1)
    log += topic.encode_offsets_batch(plain, 30)[:40]
    assert list(topic.replay(log)) == plain


def test_replay_refuses_a_record_without_key():
    batch = encode_batch([Record(0, 0, None, b"x")])
    with pytest.raises(OffsetsRecordError, match="no key"):
        list(topic.replay(batch))


def test_replay_refuses_a_corrupt_batch():
    batch = bytearray(topic.encode_offsets_batch(topic.records_for_commit("g1", {("t", 0): OFFSET}), 10))
    batch[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        list(topic.replay(bytes(batch)))


def _at(batch: bytes, base_offset: int) -> bytes:
    """A batch moved to `base_offset` (only the first field changes; the CRC does not cover it)."""
    return struct.pack(">q", base_offset) + batch[8:]


def _txn(pid: int, pairs, offset: int) -> bytes:
    return encode_batch([Record(offset + i, 0, k, v) for i, (k, v) in enumerate(pairs)], offset,
                        producer_id=pid, producer_epoch=0, base_sequence=0, is_transactional=True)


def _marker(pid: int, commit: bool, offset: int) -> bytes:
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, 0)  # version, coordinator epoch
    return encode_batch([Record(offset, 0, key, value)], offset, producer_id=pid, producer_epoch=0,
                        is_transactional=True, is_control=True)


def test_replay_applies_committed_transactional_offsets_at_their_marker_and_drops_aborted_ones():
    a = topic.records_for_commit("g1", {("t", 0): CommittedOffset(10)})
    b = topic.records_for_commit("g1", {("t", 1): CommittedOffset(20)})
    plain = topic.records_for_commit("g2", {("t", 0): CommittedOffset(1)})
    log = (_txn(100, a, 0) + _txn(200, b, 1) + _at(topic.encode_offsets_batch(plain, 0), 2)
           + _marker(200, False, 3) + _marker(100, True, 4))
    assert list(topic.replay(log)) == plain + a


def test_replay_keeps_a_plain_commit_written_after_the_transactional_one():
    txn = topic.records_for_commit("g1", {("t", 0): CommittedOffset(10)})
    later = topic.records_for_commit("g1", {("t", 0): CommittedOffset(11)})
    log = _txn(100, txn, 0) + _at(topic.encode_offsets_batch(later, 0), 1) + _marker(100, True, 2)
    assert list(topic.replay(log)) == later


def test_replay_transactional_tombstone_only_drops_the_held_commit():
    txn = topic.records_for_commit("g1", {("t", 0): CommittedOffset(10)}) + [topic.offset_tombstone("g1", "t", 0)]
    log = _txn(100, txn, 0) + _marker(100, True, 2)
    assert list(topic.replay(log)) == []


def test_replay_reports_transactions_still_open_at_the_end():
    txn = topic.records_for_commit("g1", {("t", 0): CommittedOffset(10)})
    open_txns: dict = {}
    assert list(topic.replay(_txn(100, txn, 0), open_transactions=open_txns)) == []
    assert open_txns == {100: txn}


# -- the partition of a group ------------------------------------------------------------------------

# Java's String.hashCode is h = 31*h + c over UTF-16 code units, in int32; values checked with
# OpenJDK 17 (`"...".hashCode()`), and the small ones by hand:
#   "hello": 104 -> 104*31+101 = 3325 -> 3325*31+108 = 103183 -> 103183*31+108 = 3198781
#            -> 3198781*31+111 = 99162322
#   "\U0001F600" (one code point, two UTF-16 units 0xD83D 0xDE00):
#            0xD83D*31 + 0xDE00 = 55357*31 + 56832 = 1716067 + 56832 = 1772899
@pytest.mark.parametrize("text,expected", [
    ("", 0),
    ("hello", 99162322),
    ("group-1", 293427299),
    ("my-group", -1906497762),
    ("polygenelubricants", -2147483648),    # Integer.MIN_VALUE
    ("console-consumer-12345", 158455506),
    ("\U0001F600", 1772899),
    ("grüppe-\U0001F600", -1039948164),
    ("spark-kafka-source-1", -1638101322),
])
def test_java_string_hash_matches_java(text, expected):
    assert topic.java_string_hash(text) == expected


@pytest.mark.parametrize("group,expected", [
    ("", 0),
    ("hello", 22),                     # 99162322 % 50
    ("group-1", 49),                   # 293427299 % 50
    ("my-group", 12),                  # Math.abs(-1906497762) = 1906497762, % 50 = 12 (mask: 36)
    ("polygenelubricants", 0),         # Utils.abs(MIN_VALUE) = 0
    ("\U0001F600", 49),                # 1772899 % 50
    ("grüppe-\U0001F600", 14),         # 1039948164 % 50 (mask: 34)
    ("spark-kafka-source-1", 22),      # 1638101322 % 50 (mask: 26)
])
def test_partition_for_is_kafkas_utils_abs_of_hash_code_mod_partitions(group, expected):
    assert topic.partition_for(group, 50) == expected


def test_partition_for_refuses_no_partitions():
    with pytest.raises(ValueError):
        topic.partition_for("g", 0)


@pytest.mark.parametrize("version", [3, 4], ids=["classic", "flexible"])
def test_metadata_longer_than_an_int16_string_is_refused_when_writing(version):
    with pytest.raises(OffsetsRecordError, match="metadata is longer than 32767 bytes"):
        rec.offset_commit_value(CommittedOffset(offset=1, metadata="m" * 32768), version=version)
