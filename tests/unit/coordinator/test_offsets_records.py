"""The records of `__consumer_offsets`: byte-exact Kafka 3.9 formats, every version, the
refusals, the batch written and replayed, and the group -> partition hash."""
from __future__ import annotations

import random
import struct

import pytest
from rafka.coordinator.group import offsets_records as rec
from rafka.coordinator.group import offsets_topic
from rafka.coordinator.group.group_messages import (
    CommittedOffset,
    GroupSnapshot,
    MemberSnapshot,
)
from rafka.coordinator.group.offsets_records import (
    GroupKey,
    OffsetKey,
    OffsetsRecordError,
    UnknownRecordVersionError,
)
from rafka.partition_worker.record_batch import Record, decode_records, encode_batch

from rafka.common.errors import CorruptRecordError


def s16(text: str) -> bytes:
    """A classic STRING: int16 length + UTF-8."""
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def b32(data: bytes) -> bytes:
    """Classic BYTES: int32 length + data."""
    return struct.pack(">i", len(data)) + data


def cstr(text: str | None) -> bytes:
    """A COMPACT_STRING whose length + 1 fits one varint byte (all of ours here)."""
    if text is None:
        return b"\x00"
    data = text.encode()
    assert len(data) + 1 < 0x80
    return bytes([len(data) + 1]) + data


def cbytes(data: bytes) -> bytes:
    assert len(data) + 1 < 0x80
    return bytes([len(data) + 1]) + data


OFFSET = CommittedOffset(offset=42, leader_epoch=7, metadata="meta", commit_timestamp_ms=1_700_000_000_000)

MEMBER_A = MemberSnapshot("c-1-aaaa", None, "c-1", "/10.0.0.1", 300_000, 45_000, b"\x00\x01sub", b"\x00\x01asg")
MEMBER_B = MemberSnapshot("c-2-bbbb", "static-2", "c-2", "/10.0.0.2", 60_000, 10_000, b"", b"\xff")
GROUP = GroupSnapshot(group_id="g1", protocol_type="consumer", generation_id=5, protocol_name="range",
                      leader_id="c-1-aaaa", current_state_timestamp_ms=1_700_000_000_123,
                      members=(MEMBER_A, MEMBER_B))
EMPTY_GROUP = GroupSnapshot(group_id="g1", protocol_type="consumer", generation_id=6, protocol_name=None,
                            leader_id=None, current_state_timestamp_ms=1_700_000_001_000)


# -- keys ---------------------------------------------------------------------------------------

def test_offset_commit_key_is_version_1_group_topic_partition():
    expected = struct.pack(">h", 1) + s16("g1") + s16("orders") + struct.pack(">i", 3)
    assert rec.offset_commit_key("g1", "orders", 3) == expected


def test_group_metadata_key_is_version_2_group():
    assert rec.group_metadata_key("g1") == struct.pack(">h", 2) + s16("g1")


@pytest.mark.parametrize("version", [0, 1], ids=["key-v0", "key-v1"])
def test_offset_keys_of_both_versions_decode(version):
    key = struct.pack(">h", version) + s16("grüppe") + s16("t") + struct.pack(">i", 9)
    assert rec.decode_key(key) == OffsetKey("grüppe", "t", 9)


def test_group_key_decodes():
    assert rec.decode_key(rec.group_metadata_key("g1")) == GroupKey("g1")


@pytest.mark.parametrize("version", [3, 4, 5, 11, 16, -1, 0x7FFF])
def test_key_of_unknown_version_is_refused_with_its_version(version):
    key = struct.pack(">h", version) + s16("g1")
    with pytest.raises(UnknownRecordVersionError) as info:
        rec.decode_key(key)
    assert info.value.version == version and info.value.kind == "key"
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("key", [b"", b"\x00", b"\x00\x01\x00\x05abc", rec.offset_commit_key("g", "t", 1)[:-1]],
                         ids=["empty", "half-version", "short-string", "short-partition"])
def test_truncated_key_is_refused(key):
    with pytest.raises(OffsetsRecordError, match="truncated"):
        rec.decode_key(key)


# -- offset commit values -----------------------------------------------------------------------

def test_offset_commit_value_v3_bytes_follow_kafkas_schema():
    # OffsetCommitValue v3: offset int64, leaderEpoch int32, metadata string, commitTimestamp int64
    expected = struct.pack(">hqi", 3, 42, 7) + s16("meta") + struct.pack(">q", 1_700_000_000_000)
    assert rec.offset_commit_value(OFFSET) == expected
    assert rec.decode_offset_value(expected) == OFFSET


def test_offset_commit_value_with_expire_timestamp_is_written_as_v1():
    # v1: offset int64, metadata string, commitTimestamp int64, expireTimestamp int64 (no epoch)
    o = CommittedOffset(offset=42, leader_epoch=7, metadata="m", commit_timestamp_ms=1000, expire_timestamp_ms=5000)
    expected = struct.pack(">hq", 1, 42) + s16("m") + struct.pack(">qq", 1000, 5000)
    assert rec.offset_commit_value(o) == expected
    assert rec.decode_offset_value(expected) == CommittedOffset(42, -1, "m", 1000, 5000)


def test_offset_commit_value_v4_is_compact_with_tagged_fields():
    expected = struct.pack(">hqi", 4, 42, 7) + cstr("meta") + struct.pack(">q", 1_700_000_000_000) + b"\x00"
    assert rec.offset_commit_value(OFFSET, version=4) == expected
    assert rec.decode_offset_value(expected) == OFFSET


def test_offset_commit_value_v4_skips_unknown_tagged_fields():
    tagged = b"\x02" + b"\x00\x03abc" + b"\x07\x00"   # two fields: tag 0 (3 bytes), tag 7 (empty)
    value = struct.pack(">hqi", 4, 42, 7) + cstr("meta") + struct.pack(">q", 1_700_000_000_000) + tagged
    assert rec.decode_offset_value(value) == OFFSET


# What each version keeps of OFFSET-with-expiry: (leader_epoch, expire_timestamp_ms).
_KEPT = {0: (-1, -1), 1: (-1, 99), 2: (-1, -1), 3: (7, -1), 4: (7, -1)}


@pytest.mark.parametrize("version", list(rec.OFFSET_COMMIT_VALUE_VERSIONS), ids=lambda v: f"v{v}")
def test_offset_commit_value_round_trips_in_every_version(version):
    o = CommittedOffset(offset=2**40, leader_epoch=7, metadata="ünïcode", commit_timestamp_ms=123,
                        expire_timestamp_ms=99)
    got = rec.decode_offset_value(rec.offset_commit_value(o, version=version))
    epoch, expire = _KEPT[version]
    assert got == CommittedOffset(2**40, epoch, "ünïcode", 123, expire)


def test_offset_commit_value_v0_and_v2_have_the_same_layout():
    v0 = rec.offset_commit_value(OFFSET, version=0)
    v2 = rec.offset_commit_value(OFFSET, version=2)
    assert v0[2:] == v2[2:] == struct.pack(">q", 42) + s16("meta") + struct.pack(">q", 1_700_000_000_000)


def test_null_metadata_is_stored_as_empty_string():
    o = CommittedOffset(offset=1, metadata=None)  # type: ignore[arg-type]
    assert rec.decode_offset_value(rec.offset_commit_value(o)).metadata == ""


@pytest.mark.parametrize("version", [-1, 5, 100])
def test_offset_commit_value_of_unknown_version_is_refused(version):
    value = struct.pack(">h", version) + rec.offset_commit_value(OFFSET)[2:]
    with pytest.raises(UnknownRecordVersionError, match=f"version {version}"):
        rec.decode_offset_value(value)
    with pytest.raises(UnknownRecordVersionError):
        rec.offset_commit_value(OFFSET, version=version)


def test_every_truncation_of_an_offset_commit_value_is_refused():
    for version in rec.OFFSET_COMMIT_VALUE_VERSIONS:
        value = rec.offset_commit_value(OFFSET, version=version)
        for cut in range(len(value)):
            with pytest.raises(OffsetsRecordError):
                rec.decode_offset_value(value[:cut])


def test_null_metadata_on_the_wire_is_refused():
    value = struct.pack(">hqih", 3, 42, 7, -1) + struct.pack(">q", 0)
    with pytest.raises(OffsetsRecordError, match="not nullable"):
        rec.decode_offset_value(value)


# -- group metadata values -----------------------------------------------------------------------

def _member_v3(m: MemberSnapshot) -> bytes:
    instance = struct.pack(">h", -1) if m.group_instance_id is None else s16(m.group_instance_id)
    return (s16(m.member_id) + instance + s16(m.client_id) + s16(m.client_host)
            + struct.pack(">ii", m.rebalance_timeout_ms, m.session_timeout_ms)
            + b32(m.subscription) + b32(m.assignment))


def test_group_metadata_value_v3_bytes_follow_kafkas_schema():
    # GroupMetadataValue v3: protocolType string, generation int32, protocol nullable string,
    # leader nullable string, currentStateTimestamp int64, members [MemberMetadata]:
    # memberId, groupInstanceId (nullable), clientId, clientHost, rebalanceTimeout int32,
    # sessionTimeout int32, subscription bytes, assignment bytes
    expected = (struct.pack(">h", 3) + s16("consumer") + struct.pack(">i", 5) + s16("range") + s16("c-1-aaaa")
                + struct.pack(">q", 1_700_000_000_123) + struct.pack(">i", 2)
                + _member_v3(MEMBER_A) + _member_v3(MEMBER_B))
    assert rec.group_metadata_value(GROUP) == expected
    assert rec.decode_group_value("g1", expected) == GROUP


def test_empty_group_value_v3_has_null_protocol_and_leader_and_no_members():
    expected = (struct.pack(">h", 3) + s16("consumer") + struct.pack(">ihhqi", 6, -1, -1, 1_700_000_001_000, 0))
    assert rec.group_metadata_value(EMPTY_GROUP) == expected
    assert rec.decode_group_value("g1", expected) == EMPTY_GROUP


def test_group_metadata_value_v4_is_compact_with_tagged_fields_per_struct():
    def member(m: MemberSnapshot) -> bytes:
        return (cstr(m.member_id) + cstr(m.group_instance_id) + cstr(m.client_id) + cstr(m.client_host)
                + struct.pack(">ii", m.rebalance_timeout_ms, m.session_timeout_ms)
                + cbytes(m.subscription) + cbytes(m.assignment) + b"\x00")
    expected = (struct.pack(">h", 4) + cstr("consumer") + struct.pack(">i", 5) + cstr("range") + cstr("c-1-aaaa")
                + struct.pack(">q", 1_700_000_000_123) + b"\x03" + member(MEMBER_A) + member(MEMBER_B) + b"\x00")
    assert rec.group_metadata_value(GROUP, version=4) == expected
    assert rec.decode_group_value("g1", expected) == GROUP


def _as_version(g: GroupSnapshot, version: int) -> GroupSnapshot:
    """What reading back a value of `version` gives."""
    members = tuple(MemberSnapshot(
        m.member_id, m.group_instance_id if version >= 3 else None, m.client_id, m.client_host,
        m.session_timeout_ms if version == 0 else m.rebalance_timeout_ms, m.session_timeout_ms,
        m.subscription, m.assignment) for m in g.members)
    return GroupSnapshot(g.group_id, g.protocol_type, g.generation_id, g.protocol_name, g.leader_id,
                         g.current_state_timestamp_ms if version >= 2 else -1, members)


@pytest.mark.parametrize("version", list(rec.GROUP_METADATA_VALUE_VERSIONS), ids=lambda v: f"v{v}")
@pytest.mark.parametrize("group", [GROUP, EMPTY_GROUP], ids=["stable", "empty"])
def test_group_metadata_value_round_trips_in_every_version(group, version):
    got = rec.decode_group_value("g1", rec.group_metadata_value(group, version=version))
    assert got == _as_version(group, version)


def test_group_metadata_value_v0_has_no_rebalance_timeout_and_reads_the_session_timeout():
    value = rec.group_metadata_value(GROUP, version=0)
    expected_member_a = (s16(MEMBER_A.member_id) + s16(MEMBER_A.client_id) + s16(MEMBER_A.client_host)
                         + struct.pack(">i", MEMBER_A.session_timeout_ms)
                         + b32(MEMBER_A.subscription) + b32(MEMBER_A.assignment))
    assert value.startswith(struct.pack(">h", 0) + s16("consumer") + struct.pack(">i", 5) + s16("range")
                            + s16("c-1-aaaa") + struct.pack(">i", 2) + expected_member_a)
    assert rec.decode_group_value("g1", value).members[0].rebalance_timeout_ms == 45_000


def test_group_metadata_value_of_unknown_version_is_refused():
    with pytest.raises(UnknownRecordVersionError, match="group metadata value version 5"):
        rec.decode_group_value("g1", struct.pack(">h", 5) + rec.group_metadata_value(GROUP)[2:])


def test_every_truncation_of_a_group_metadata_value_is_refused():
    for version in rec.GROUP_METADATA_VALUE_VERSIONS:
        value = rec.group_metadata_value(GROUP, version=version)
        for cut in range(len(value)):
            with pytest.raises(OffsetsRecordError):
                rec.decode_group_value("g1", value[:cut])


def test_absurd_member_count_is_refused_without_allocating():
    value = struct.pack(">h", 3) + s16("consumer") + struct.pack(">ihhqi", 6, -1, -1, 0, 2**31 - 1)
    with pytest.raises(OffsetsRecordError, match="elements"):
        rec.decode_group_value("g1", value)


def test_null_member_id_is_refused_when_writing():
    bad = GroupSnapshot("g1", "consumer", 1, "range", None, 0,
                        (MemberSnapshot(None, None, "c", "h", 1, 1, b"", b""),))  # type: ignore[arg-type]
    with pytest.raises(OffsetsRecordError, match="member_id is not nullable"):
        rec.group_metadata_value(bad)


def test_random_bytes_never_escape_as_anything_but_offsets_record_error():
    rng = random.Random(20240917)
    seeds = [rec.offset_commit_value(OFFSET, version=v) for v in rec.OFFSET_COMMIT_VALUE_VERSIONS]
    seeds += [rec.group_metadata_value(GROUP, version=v) for v in rec.GROUP_METADATA_VALUE_VERSIONS]
    for i in range(3000):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if i % 3 == 0:
            data = bytearray(rng.randbytes(rng.randint(0, 40)))
        for decode in (rec.decode_offset_value, lambda b: rec.decode_group_value("g", b), rec.decode_key):
            try:
                decode(bytes(data))
            except OffsetsRecordError:
                pass


# -- records, batches, replay ----------------------------------------------------------------------

def test_records_for_commit_pair_each_key_with_its_value():
    offsets = {("t", 0): OFFSET, ("u", 3): CommittedOffset(7)}
    pairs = offsets_topic.records_for_commit("g1", offsets)
    assert pairs == [(rec.offset_commit_key("g1", "t", 0), rec.offset_commit_value(OFFSET)),
                     (rec.offset_commit_key("g1", "u", 3), rec.offset_commit_value(CommittedOffset(7)))]


def test_records_for_group_and_tombstones():
    assert offsets_topic.records_for_group(GROUP) == [(rec.group_metadata_key("g1"), rec.group_metadata_value(GROUP))]
    assert offsets_topic.group_tombstone("g1") == (rec.group_metadata_key("g1"), None)
    assert offsets_topic.offset_tombstone("g1", "t", 2) == (rec.offset_commit_key("g1", "t", 2), None)
    assert offsets_topic.offset_tombstones("g1", [("t", 0), ("t", 1)]) == [
        (rec.offset_commit_key("g1", "t", 0), None), (rec.offset_commit_key("g1", "t", 1), None)]


def test_offsets_batch_is_one_uncompressed_create_time_batch_without_producer():
    pairs = offsets_topic.records_for_commit("g1", {("t", 0): OFFSET}) + [offsets_topic.group_tombstone("g1")]
    batch = offsets_topic.encode_offsets_batch(pairs, timestamp_ms=1234)
    header, records = decode_records(batch)
    assert (header.base_offset, header.compression, header.timestamp_type, header.producer_id) == (0, 0, 0, -1)
    assert not header.is_transactional and not header.is_control
    assert [(r.offset, r.timestamp, r.key, r.value) for r in records] == [
        (0, 1234, pairs[0][0], pairs[0][1]), (1, 1234, pairs[1][0], None)]


def test_empty_offsets_batch_is_refused():
    with pytest.raises(ValueError):
        offsets_topic.encode_offsets_batch([], 0)


def test_replay_yields_the_records_of_concatenated_batches_in_order():
    first = offsets_topic.records_for_commit("g1", {("t", 0): OFFSET, ("t", 1): CommittedOffset(3)})
    second = offsets_topic.records_for_group(GROUP) + [offsets_topic.offset_tombstone("g1", "t", 1)]
    log = _at(offsets_topic.encode_offsets_batch(first, 10), 0) + _at(offsets_topic.encode_offsets_batch(second, 20), 2)
    assert list(offsets_topic.replay(log)) == first + second
    assert list(offsets_topic.replay(memoryview(log))) == first + second


def test_replay_skips_control_batches_and_ignores_a_trailing_partial_batch():
    plain = offsets_topic.records_for_commit("g1", {("t", 0): OFFSET})
    log = _at(offsets_topic.encode_offsets_batch(plain, 10), 0) + _marker(pid=-1, commit=True, offset=1)
    log += offsets_topic.encode_offsets_batch(plain, 30)[:40]
    assert list(offsets_topic.replay(log)) == plain


def test_replay_refuses_a_record_without_key():
    batch = encode_batch([Record(0, 0, None, b"x")])
    with pytest.raises(OffsetsRecordError, match="no key"):
        list(offsets_topic.replay(batch))


def test_replay_refuses_a_corrupt_batch():
    batch = bytearray(offsets_topic.encode_offsets_batch(offsets_topic.records_for_commit("g1", {("t", 0): OFFSET}), 10))
    batch[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        list(offsets_topic.replay(bytes(batch)))


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
    a = offsets_topic.records_for_commit("g1", {("t", 0): CommittedOffset(10)})
    b = offsets_topic.records_for_commit("g1", {("t", 1): CommittedOffset(20)})
    plain = offsets_topic.records_for_commit("g2", {("t", 0): CommittedOffset(1)})
    log = (_txn(100, a, 0) + _txn(200, b, 1) + _at(offsets_topic.encode_offsets_batch(plain, 0), 2)
           + _marker(200, False, 3) + _marker(100, True, 4))
    assert list(offsets_topic.replay(log)) == plain + a


def test_replay_keeps_a_plain_commit_written_after_the_transactional_one():
    txn = offsets_topic.records_for_commit("g1", {("t", 0): CommittedOffset(10)})
    later = offsets_topic.records_for_commit("g1", {("t", 0): CommittedOffset(11)})
    log = _txn(100, txn, 0) + _at(offsets_topic.encode_offsets_batch(later, 0), 1) + _marker(100, True, 2)
    assert list(offsets_topic.replay(log)) == later


def test_replay_transactional_tombstone_only_drops_the_held_commit():
    txn = offsets_topic.records_for_commit("g1", {("t", 0): CommittedOffset(10)}) + [offsets_topic.offset_tombstone("g1", "t", 0)]
    log = _txn(100, txn, 0) + _marker(100, True, 2)
    assert list(offsets_topic.replay(log)) == []


def test_replay_reports_transactions_still_open_at_the_end():
    txn = offsets_topic.records_for_commit("g1", {("t", 0): CommittedOffset(10)})
    open_txns: dict = {}
    assert list(offsets_topic.replay(_txn(100, txn, 0), open_transactions=open_txns)) == []
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
    assert offsets_topic.java_string_hash(text) == expected


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
    assert offsets_topic.partition_for(group, 50) == expected


def test_partition_for_refuses_no_partitions():
    with pytest.raises(ValueError):
        offsets_topic.partition_for("g", 0)


@pytest.mark.parametrize("version", [3, 4], ids=["classic", "flexible"])
def test_metadata_longer_than_an_int16_string_is_refused_when_writing(version):
    with pytest.raises(OffsetsRecordError, match="metadata is longer than 32767 bytes"):
        rec.offset_commit_value(CommittedOffset(offset=1, metadata="m" * 32768), version=version)
