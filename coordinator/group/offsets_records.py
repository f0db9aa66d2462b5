"""The keys and values of the records of `__consumer_offsets`, in Kafka 3.9's formats.

Every key and value starts with an int16 version (Kafka's `GroupCoordinatorRecordSerde`,
`MessageUtil.toVersionPrefixedBytes`); the rest follows the JSON schemas of Kafka's
group-coordinator module, transcribed below as `net/protocol/schema.py` tables that the
protocol codec reads and writes (`codec.encode_data`/`decode_data`):

- key v0/v1, `OffsetCommitKey`: group, topic, partition (the two versions are the same bytes
  after the prefix; Kafka 3.9 writes v1). Key v2, `GroupMetadataKey`: group. Other key
  versions belong to the new (KIP-848) coordinator: `decode_key` raises
  `UnknownRecordVersionError` for them and Kafka's loader skips them with a warning.
- `OffsetCommitValue` v0-v4 (v1 adds expireTimestamp, v2 drops it again, v3 adds leaderEpoch,
  v4 is v3 flexible). Written: v3, or v1 when the commit carries an explicit expire
  timestamp (`MetadataVersion.offsetCommitValueVersion` at 3.9).
- `GroupMetadataValue` v0-v4 (v1 adds the member's rebalanceTimeout, v2 the
  currentStateTimestamp, v3 the member's groupInstanceId, v4 is v3 flexible). Written: v3
  (`MetadataVersion.groupMetadataValueVersion` at 3.9).
- a record whose value is null (a tombstone) deletes its key: an offset, or a group's metadata.

Classic encodings: int16-length UTF-8 strings (-1 = null), int32-length bytes and arrays.
Flexible (v4): unsigned-varint length + 1 (0 = null) and a tagged-field section after every
struct; we write no tagged fields and skip unknown ones when reading. Like Kafka's readers,
the decoders ignore bytes left after the last field.

Pure functions, no I/O. `offsets_topic.py` says which records each write of the coordinator
makes, batches them and replays a partition's log.
"""
from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass

from rafka.coordinator.group.group_messages import (
    NO_EXPIRE_TIMESTAMP,
    NO_LEADER_EPOCH,
    CommittedOffset,
    GroupSnapshot,
    MemberSnapshot,
)
from rafka.net.protocol import codec
from rafka.net.protocol.schema import ARRAY, BYTES, INT32, INT64, STRING, DataSchema, Field

OFFSET_COMMIT_KEY_VERSION = 1      # OffsetCommitKey.HIGHEST_SUPPORTED_VERSION
GROUP_METADATA_KEY_VERSION = 2     # GroupMetadataKey's only version
OFFSET_COMMIT_VALUE_VERSION = 3    # highest non-flexible version; v1 when an expire ts is set
OFFSET_COMMIT_VALUE_EXPIRE_VERSION = 1
GROUP_METADATA_VALUE_VERSION = 3   # highest non-flexible version
OFFSET_COMMIT_VALUE_VERSIONS = range(5)
GROUP_METADATA_VALUE_VERSIONS = range(5)
NO_CURRENT_STATE_TIMESTAMP = -1    # GroupMetadataValue's default before v2

KeyValue = tuple[bytes, bytes | None]   # one record: key, value (None = tombstone)


class OffsetsRecordError(ValueError):
    """A `__consumer_offsets` key or value that is truncated, malformed or of an unknown version."""


class UnknownRecordVersionError(OffsetsRecordError):
    """A key or value version this codec does not know. `kind` is "key", "offset commit value"
    or "group metadata value"; Kafka's loader skips unknown *keys* (records of a newer
    coordinator) and fails on unknown values."""

    def __init__(self, kind: str, version: int) -> None:
        super().__init__(f"unknown {kind} version {version} in __consumer_offsets")
        self.kind = kind
        self.version = version


@dataclass(frozen=True)
class OffsetKey:
    """Key of a committed offset (key versions 0 and 1)."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupKey:
    """Key of a group's metadata (key version 2)."""

    group: str


# -- the schemas, as tables of the protocol codec ------------------------------------------

def _range(versions: range) -> tuple[int, int]:
    return versions[0], versions[-1]


# OffsetCommitKey.json (versions 0-1).
_OFFSET_COMMIT_KEY = DataSchema("OffsetCommitKey", (0, 1), None, (
    Field("group", STRING),
    Field("topic", STRING),
    Field("partition", INT32),
))

# GroupMetadataKey.json (version 2).
_GROUP_METADATA_KEY = DataSchema("GroupMetadataKey", (2, 2), None, (
    Field("group", STRING),
))

# OffsetCommitValue.json: v4 is the first flexible version (KIP-915).
_OFFSET_COMMIT_VALUE = DataSchema("OffsetCommitValue", _range(OFFSET_COMMIT_VALUE_VERSIONS), 4, (
    Field("offset", INT64),
    Field("leader_epoch", INT32, versions="3+", default=NO_LEADER_EPOCH),
    Field("metadata", STRING),
    Field("commit_timestamp", INT64),
    Field("expire_timestamp", INT64, versions="1", default=NO_EXPIRE_TIMESTAMP),  # v1 only
))

# GroupMetadataValue.json: v4 is the first flexible version (KIP-915).
_GROUP_METADATA_VALUE = DataSchema("GroupMetadataValue", _range(GROUP_METADATA_VALUE_VERSIONS), 4, (
    Field("protocol_type", STRING),
    Field("generation", INT32),
    Field("protocol", STRING, nullable="0+"),
    Field("leader", STRING, nullable="0+"),
    Field("current_state_timestamp", INT64, versions="2+", default=NO_CURRENT_STATE_TIMESTAMP),
    Field("members", ARRAY, struct_name="MemberMetadata", fields=(
        Field("member_id", STRING),
        Field("group_instance_id", STRING, versions="3+", nullable="3+", default=None),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("rebalance_timeout", INT32, versions="1+", default=-1),  # v0 readers use the session timeout
        Field("session_timeout", INT32),
        Field("subscription", BYTES),
        Field("assignment", BYTES),
    )),
))

_VERSION = struct.Struct(">h")


def _encode(schema: DataSchema, version: int, values: Mapping[str, object]) -> bytes:
    """The int16 version, then the record written by the protocol codec (strictly)."""
    if not schema.supports(version):
        raise UnknownRecordVersionError(schema.name, version)
    try:
        return bytes(codec.encode_data(schema, version, values, bytearray(_VERSION.pack(version))))
    except codec.EncodeError as e:
        raise OffsetsRecordError(f"{schema.name}: {e}") from None


def _version(buf: bytes | bytearray | memoryview, kind: str) -> int:
    if len(buf) < 2:
        raise OffsetsRecordError(f"{kind} is truncated: {len(buf)} bytes, no version")
    return _VERSION.unpack_from(buf)[0]


def _decode(schema: DataSchema, buf: bytes | bytearray | memoryview, kind: str) -> tuple[int, dict]:
    """(version, values) of a version-prefixed record; bytes after the last field are ignored."""
    version = _version(buf, kind)
    if not schema.supports(version):
        raise UnknownRecordVersionError(kind, version)
    try:
        values, _ = codec.decode_data(schema, version, buf, 2)
    except codec.ProtocolError as e:
        raise OffsetsRecordError(f"{kind} v{version} is truncated or malformed: {e}") from None
    return version, values


# -- keys -----------------------------------------------------------------------------------

def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    """The key of `group`'s committed offset of topic-partition, version 1 as Kafka writes it."""
    return _encode(_OFFSET_COMMIT_KEY, OFFSET_COMMIT_KEY_VERSION,
                   {"group": group, "topic": topic, "partition": partition})


def group_metadata_key(group: str) -> bytes:
    """The key of `group`'s metadata (version 2)."""
    return _encode(_GROUP_METADATA_KEY, GROUP_METADATA_KEY_VERSION, {"group": group})


def decode_key(key: bytes | bytearray | memoryview) -> OffsetKey | GroupKey:
    """`OffsetKey` for key versions 0 and 1, `GroupKey` for version 2.

    Raises UnknownRecordVersionError for any other version (callers that load a partition
    skip those records, as Kafka does) and OffsetsRecordError when the key is truncated.
    """
    version = _version(key, "key")
    if _OFFSET_COMMIT_KEY.supports(version):
        _, v = _decode(_OFFSET_COMMIT_KEY, key, "key")
        return OffsetKey(v["group"], v["topic"], v["partition"])
    if _GROUP_METADATA_KEY.supports(version):
        _, v = _decode(_GROUP_METADATA_KEY, key, "key")
        return GroupKey(v["group"])
    raise UnknownRecordVersionError("key", version)


# -- values ---------------------------------------------------------------------------------

def offset_commit_value(offset: CommittedOffset, *, version: int | None = None) -> bytes:
    """`OffsetCommitValue` bytes. By default the version Kafka 3.9 writes: 1 when the commit
    has an explicit expire timestamp (only old OffsetCommit versions send a retention time),
    otherwise 3. Versions without a field drop it (leader epoch before v3, the expire
    timestamp outside v1); a null `metadata` is stored as "" as Kafka's OffsetAndMetadata does."""
    if version is None:
        version = (OFFSET_COMMIT_VALUE_EXPIRE_VERSION if offset.expire_timestamp_ms != NO_EXPIRE_TIMESTAMP
                   else OFFSET_COMMIT_VALUE_VERSION)
    return _encode(_OFFSET_COMMIT_VALUE, version, {
        "offset": offset.offset,
        "leader_epoch": offset.leader_epoch,
        "metadata": offset.metadata if offset.metadata is not None else "",
        "commit_timestamp": offset.commit_timestamp_ms,
        "expire_timestamp": offset.expire_timestamp_ms,
    })


def decode_offset_value(value: bytes | bytearray | memoryview) -> CommittedOffset:
    """A `CommittedOffset` from any of v0-v4. Fields a version lacks take the schema's
    default: leader epoch -1 before v3, expire timestamp -1 outside v1."""
    _, v = _decode(_OFFSET_COMMIT_VALUE, value, "offset commit value")
    return CommittedOffset(offset=v["offset"], leader_epoch=v["leader_epoch"], metadata=v["metadata"],
                           commit_timestamp_ms=v["commit_timestamp"],
                           expire_timestamp_ms=v["expire_timestamp"])


def group_metadata_value(snapshot: GroupSnapshot, *, version: int = GROUP_METADATA_VALUE_VERSION) -> bytes:
    """`GroupMetadataValue` bytes of a group, version 3 by default as Kafka 3.9 writes it.

    `group_id` is not part of the value (it is the key). Older versions drop the fields they
    lack (state timestamp before v2, group instance ids before v3, rebalance timeouts in v0).
    """
    return _encode(_GROUP_METADATA_VALUE, version, {
        "protocol_type": snapshot.protocol_type if snapshot.protocol_type is not None else "",
        "generation": snapshot.generation_id,
        "protocol": snapshot.protocol_name,
        "leader": snapshot.leader_id,
        "current_state_timestamp": snapshot.current_state_timestamp_ms,
        "members": [{
            "member_id": m.member_id,
            "group_instance_id": m.group_instance_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "rebalance_timeout": m.rebalance_timeout_ms,
            "session_timeout": m.session_timeout_ms,
            "subscription": m.subscription,
            "assignment": m.assignment,
        } for m in snapshot.members],
    })


def decode_group_value(group_id: str, value: bytes | bytearray | memoryview) -> GroupSnapshot:
    """A `GroupSnapshot` from any of v0-v4, as Kafka's `readGroupMessageValue` reads it:
    v0 members get their session timeout as rebalance timeout; before v2 the state timestamp
    is -1 (unknown); before v3 members have no group instance id. An empty protocol type
    stays "" (Kafka reads it as "no protocol type", a group used only for offsets)."""
    version, v = _decode(_GROUP_METADATA_VALUE, value, "group metadata value")
    members = tuple(MemberSnapshot(
        member_id=m["member_id"],
        group_instance_id=m["group_instance_id"],
        client_id=m["client_id"],
        client_host=m["client_host"],
        rebalance_timeout_ms=m["session_timeout"] if version == 0 else m["rebalance_timeout"],
        session_timeout_ms=m["session_timeout"],
        subscription=m["subscription"],
        assignment=m["assignment"],
    ) for m in v["members"])
    return GroupSnapshot(group_id=group_id, protocol_type=v["protocol_type"], generation_id=v["generation"],
                         protocol_name=v["protocol"], leader_id=v["leader"],
                         current_state_timestamp_ms=v["current_state_timestamp"], members=members)
