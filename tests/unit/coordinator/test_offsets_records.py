"""The keys and values of `__consumer_offsets` records: byte-exact Kafka 3.9 formats, every
version, the refusals. The batches and replay are test_offsets_topic.py's."""
from __future__ import annotations

import random
import struct

import pytest
from rafka.coordinator.group import offsets_records as rec
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
