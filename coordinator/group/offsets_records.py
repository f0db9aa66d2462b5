"""The records of `__consumer_offsets`, in Kafka 3.9's formats, and the partition of a group.

Every key and value starts with an int16 version (Kafka's `GroupCoordinatorRecordSerde`,
`MessageUtil.toVersionPrefixedBytes`); the rest follows the JSON schemas of Kafka's
group-coordinator module, transcribed below as field tables read by one small codec:

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

Pure functions, no I/O. The records go to the log in one v2 batch per write
(`encode_offsets_batch`) and come back through `replay`.
"""
from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from rafka.common.varint import VarintError, read_unsigned_varint, write_unsigned_varint
from rafka.coordinator.group.group_messages import (
    NO_EXPIRE_TIMESTAMP,
    NO_LEADER_EPOCH,
    CommittedOffset,
    GroupSnapshot,
    MemberSnapshot,
)
from rafka.partition_worker.record_batch import (
    Record,
    decode_records,
    encode_batch,
    iter_batches,
)

OFFSET_COMMIT_KEY_VERSION = 1      # OffsetCommitKey.HIGHEST_SUPPORTED_VERSION
GROUP_METADATA_KEY_VERSION = 2     # GroupMetadataKey's only version
OFFSET_COMMIT_VALUE_VERSION = 3    # highest non-flexible version; v1 when an expire ts is set
OFFSET_COMMIT_VALUE_EXPIRE_VERSION = 1
GROUP_METADATA_VALUE_VERSION = 3   # highest non-flexible version
OFFSET_COMMIT_VALUE_VERSIONS = range(5)
GROUP_METADATA_VALUE_VERSIONS = range(5)
NO_CURRENT_STATE_TIMESTAMP = -1    # GroupMetadataValue's default before v2

# Control records (end of a transaction), key: version int16, type int16.
_CONTROL_ABORT = 0
_CONTROL_COMMIT = 1

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


# -- the schemas, as tables ---------------------------------------------------------------

INT32, INT64, STRING, BYTES, STRUCTS = "int32", "int64", "string", "bytes", "[]struct"
_ANY = (0, 0x7FFF)


@dataclass(frozen=True)
class _Field:
    name: str
    type: str
    versions: tuple[int, int] = _ANY    # inclusive; fields outside it are skipped/defaulted
    nullable: bool = False              # in every version that has the field (true of ours)
    default: object = None
    fields: tuple[_Field, ...] = ()   # for STRUCTS

    def present(self, version: int) -> bool:
        return self.versions[0] <= version <= self.versions[1]


@dataclass(frozen=True)
class _Schema:
    name: str
    versions: range
    flexible_from: int
    fields: tuple[_Field, ...]


def _from(version: int) -> tuple[int, int]:
    return (version, _ANY[1])


_OFFSET_COMMIT_KEY = _Schema("OffsetCommitKey", range(2), 0x7FFF, (
    _Field("group", STRING),
    _Field("topic", STRING),
    _Field("partition", INT32),
))

_GROUP_METADATA_KEY = _Schema("GroupMetadataKey", range(2, 3), 0x7FFF, (
    _Field("group", STRING),
))

# OffsetCommitValue.json: v4 is the first flexible version (KIP-915).
_OFFSET_COMMIT_VALUE = _Schema("OffsetCommitValue", OFFSET_COMMIT_VALUE_VERSIONS, 4, (
    _Field("offset", INT64),
    _Field("leader_epoch", INT32, _from(3), default=NO_LEADER_EPOCH),
    _Field("metadata", STRING),
    _Field("commit_timestamp", INT64),
    _Field("expire_timestamp", INT64, (1, 1), default=NO_EXPIRE_TIMESTAMP),  # v1 only
))

# GroupMetadataValue.json: v4 is the first flexible version (KIP-915).
_GROUP_METADATA_VALUE = _Schema("GroupMetadataValue", GROUP_METADATA_VALUE_VERSIONS, 4, (
    _Field("protocol_type", STRING),
    _Field("generation", INT32),
    _Field("protocol", STRING, nullable=True),
    _Field("leader", STRING, nullable=True),
    _Field("current_state_timestamp", INT64, _from(2), default=NO_CURRENT_STATE_TIMESTAMP),
    _Field("members", STRUCTS, fields=(
        _Field("member_id", STRING),
        _Field("group_instance_id", STRING, _from(3), nullable=True),
        _Field("client_id", STRING),
        _Field("client_host", STRING),
        _Field("rebalance_timeout", INT32, _from(1), default=-1),  # v0 readers use the session timeout
        _Field("session_timeout", INT32),
        _Field("subscription", BYTES),
        _Field("assignment", BYTES),
    )),
))


# -- the codec ----------------------------------------------------------------------------

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


def _write_length(n: int, flexible: bool, out: bytearray, size: struct.Struct) -> None:
    """A length (-1 = null): compact (n + 1 as an unsigned varint) or fixed width."""
    if flexible:
        write_unsigned_varint(n + 1, out)
    else:
        out += size.pack(n)


def _encode_struct(fields: Sequence[_Field], values: Mapping[str, object], version: int,
                   flexible: bool, out: bytearray, where: str) -> None:
    for f in fields:
        if not f.present(version):
            continue  # all fields that come and go are "ignorable" in Kafka's schemas
        v = values[f.name]
        if f.type == INT32:
            out += _I32.pack(v)
        elif f.type == INT64:
            out += _I64.pack(v)
        elif f.type in (STRING, BYTES):
            if v is None:
                if not f.nullable:
                    raise OffsetsRecordError(f"{where}.{f.name} is not nullable in version {version}")
                _write_length(-1, flexible, out, _I16 if f.type == STRING else _I32)
            else:
                data = v.encode("utf-8") if f.type == STRING else bytes(v)
                if f.type == STRING and len(data) > 0x7FFF:
                    raise OffsetsRecordError(f"{where}.{f.name} is longer than 32767 bytes")
                _write_length(len(data), flexible, out, _I16 if f.type == STRING else _I32)
                out += data
        elif f.type == STRUCTS:
            items = list(v)
            _write_length(len(items), flexible, out, _I32)
            for item in items:
                _encode_struct(f.fields, item, version, flexible, out, f"{where}.{f.name}")
    if flexible:
        write_unsigned_varint(0, out)  # no tagged fields


def _encode(schema: _Schema, version: int, values: Mapping[str, object]) -> bytes:
    if version not in schema.versions:
        raise UnknownRecordVersionError(schema.name, version)
    out = bytearray(_I16.pack(version))
    _encode_struct(schema.fields, values, version, version >= schema.flexible_from, out, schema.name)
    return bytes(out)


class _Reader:
    """Reads one value; every overrun raises OffsetsRecordError naming the schema."""

    def __init__(self, buf: bytes | bytearray | memoryview, where: str) -> None:
        self.buf = memoryview(buf)
        self.pos = 0
        self.where = where

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.buf):
            raise OffsetsRecordError(f"{self.where} is truncated at byte {self.pos} of {len(self.buf)}")
        chunk = self.buf[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def fixed(self, s: struct.Struct) -> int:
        return s.unpack(self.take(s.size))[0]

    def uvarint(self) -> int:
        try:
            value, self.pos = read_unsigned_varint(self.buf, self.pos)
        except VarintError as e:
            raise OffsetsRecordError(f"{self.where} is truncated or malformed at byte {self.pos}: {e}") from None
        return value

    def length(self, flexible: bool, size: struct.Struct) -> int:
        return self.uvarint() - 1 if flexible else self.fixed(size)

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()               # tag
            self.take(self.uvarint())   # size, data


def _decode_struct(r: _Reader, fields: Sequence[_Field], version: int, flexible: bool) -> dict:
    values: dict[str, object] = {}
    for f in fields:
        if not f.present(version):
            values[f.name] = f.default
        elif f.type == INT32:
            values[f.name] = r.fixed(_I32)
        elif f.type == INT64:
            values[f.name] = r.fixed(_I64)
        elif f.type in (STRING, BYTES):
            n = r.length(flexible, _I16 if f.type == STRING else _I32)
            if n < -1:
                raise OffsetsRecordError(f"{r.where}.{f.name} has a negative length {n}")
            if n == -1:
                if not f.nullable:
                    raise OffsetsRecordError(f"{r.where}.{f.name} is null but not nullable")
                values[f.name] = None
            elif f.type == STRING:
                try:
                    values[f.name] = str(r.take(n), "utf-8")
                except UnicodeDecodeError as e:
                    raise OffsetsRecordError(f"{r.where}.{f.name} is not UTF-8: {e}") from e
            else:
                values[f.name] = bytes(r.take(n))
        elif f.type == STRUCTS:
            n = r.length(flexible, _I32)
            if n < 0:
                raise OffsetsRecordError(f"{r.where}.{f.name} is a null or negative-length array")
            if n > len(r.buf) - r.pos:   # each element takes at least one byte
                raise OffsetsRecordError(f"{r.where}.{f.name} claims {n} elements in "
                                         f"{len(r.buf) - r.pos} bytes")
            values[f.name] = [_decode_struct(r, f.fields, version, flexible) for _ in range(n)]
    if flexible:
        r.skip_tagged_fields()
    return values


def _decode(schema: _Schema, buf: bytes | bytearray | memoryview, kind: str) -> tuple[int, dict]:
    r = _Reader(buf, schema.name)
    version = r.fixed(_I16)
    if version not in schema.versions:
        raise UnknownRecordVersionError(kind, version)
    return version, _decode_struct(r, schema.fields, version, version >= schema.flexible_from)


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
    version = _Reader(key, "key").fixed(_I16)
    if version in _OFFSET_COMMIT_KEY.versions:
        _, v = _decode(_OFFSET_COMMIT_KEY, key, "key")
        return OffsetKey(v["group"], v["topic"], v["partition"])
    if version in _GROUP_METADATA_KEY.versions:
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


# -- which partition holds a group -----------------------------------------------------------

def java_string_hash(text: str) -> int:
    """Java's `String.hashCode()`: h = 31*h + c over the UTF-16 code units (a character
    outside the BMP counts as its two surrogates), wrapped to a signed int32."""
    units = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for (unit,) in struct.iter_unpack(">H", units):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, partitions: int) -> int:
    """The `__consumer_offsets` partition of a group: `Utils.abs(groupId.hashCode) % partitions`.

    Kafka's `Utils.abs` is `Math.abs` with Integer.MIN_VALUE mapped to 0; it is not
    `Utils.toPositive` (`n & 0x7fffffff`, the producer partitioner's), and the two differ for
    every other negative hash: "my-group" hashes to -1906497762, which is partition 12 of 50
    here and would be 36 with the mask.
    """
    if partitions <= 0:
        raise ValueError(f"partitions must be positive: {partitions}")
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


# -- records to write -------------------------------------------------------------------------

def records_for_commit(group: str, offsets: Mapping[tuple[str, int], CommittedOffset]) -> list[KeyValue]:
    """One (key, value) per committed offset, in the mapping's order."""
    return [(offset_commit_key(group, topic, partition), offset_commit_value(o))
            for (topic, partition), o in offsets.items()]


def records_for_group(snapshot: GroupSnapshot) -> list[KeyValue]:
    """The (key, value) that stores a group's metadata (one record)."""
    return [(group_metadata_key(snapshot.group_id), group_metadata_value(snapshot))]


def offset_tombstone(group: str, topic: str, partition: int) -> tuple[bytes, None]:
    """The record that deletes one committed offset."""
    return offset_commit_key(group, topic, partition), None


def offset_tombstones(group: str, partitions: Iterable[tuple[str, int]]) -> list[tuple[bytes, None]]:
    return [offset_tombstone(group, topic, partition) for topic, partition in partitions]


def group_tombstone(group: str) -> tuple[bytes, None]:
    """The record that deletes a group's metadata (not its offsets: each has its own tombstone)."""
    return group_metadata_key(group), None


def encode_offsets_batch(pairs: Sequence[KeyValue], timestamp_ms: int) -> bytes:
    """One v2 batch of the records, ready to append to a `__consumer_offsets` partition:
    no compression (offsets.topic.compression.codec's default), CreateTime `timestamp_ms`,
    no producer id, offsets from 0 (the leader assigns the real ones). Kafka writes every
    commit or group update as one such batch, so it is applied all or nothing.
    Raises ValueError for no records."""
    if not pairs:
        raise ValueError("a __consumer_offsets batch needs at least one record")
    return encode_batch([Record(i, timestamp_ms, key, value) for i, (key, value) in enumerate(pairs)])


# -- records read back -------------------------------------------------------------------------

def replay(batches: bytes | bytearray | memoryview, *,
           open_transactions: dict[int, list[KeyValue]] | None = None) -> Iterator[KeyValue]:
    """The (key, value | None) records of a `__consumer_offsets` partition read from its log
    (concatenated v2 batches), in log order, as Kafka's `doLoadGroupsAndOffsets` applies them.

    Offset commits of a transactional batch (TxnOffsetCommit) are held per producer id until
    the transaction's control record, the latest per offset key (a transactional tombstone
    only drops the held commit). COMMIT yields them, except where a non-transactional commit
    of the same offset was written after the transaction's (Kafka keeps the later write);
    ABORT drops them. Held commits of transactions still open at the end go to
    `open_transactions` (producer id -> records) when it is given, and are otherwise dropped.
    Control batches yield nothing. A trailing incomplete batch (a read cut at a size limit)
    is ignored. Raises CorruptRecordError for a bad batch (CRC, lengths) and
    OffsetsRecordError for a record without a key; keys of unknown versions pass through
    (the consumer decides: `OffsetStore.apply` skips them, as Kafka's loader does).
    """
    mv = batches if isinstance(batches, memoryview) else memoryview(batches)
    # producer id -> offset key -> (base offset of its batch, key bytes, value bytes)
    pending: dict[int, dict[OffsetKey, tuple[int, bytes, bytes]]] = {}
    # offset key -> base offset of the batch of its latest non-transactional commit
    last_plain: dict[OffsetKey, int] = {}
    for header in list(iter_batches(mv)):
        _, records = decode_records(mv, header.position)
        if header.is_control:
            if not records:
                continue
            marker = records[0].key
            if marker is None or len(marker) < 4:
                raise OffsetsRecordError(f"control record at offset {records[0].offset} has a bad key")
            _, kind = struct.unpack_from(">hh", marker)
            held = pending.pop(header.producer_id, {})
            if kind == _CONTROL_COMMIT:
                for k, (batch_offset, key, value) in held.items():
                    if last_plain.get(k, -1) > batch_offset:
                        continue   # a later plain commit of the same offset wins
                    last_plain[k] = batch_offset
                    yield key, value
            continue
        for record in records:
            if record.key is None:
                raise OffsetsRecordError(f"record at offset {record.offset} of __consumer_offsets has no key")
            k = _offset_key_or_none(record.key) if header.is_transactional or pending else None
            if k is not None and header.is_transactional:
                held = pending.setdefault(header.producer_id, {})
                if record.value is None:
                    held.pop(k, None)
                else:
                    held[k] = (header.base_offset, record.key, record.value)
                continue
            if k is not None:
                if record.value is None:
                    last_plain.pop(k, None)
                else:
                    last_plain[k] = header.base_offset
            yield record.key, record.value
    if open_transactions is not None:
        for pid, held in pending.items():
            if held:
                open_transactions[pid] = [(key, value) for _, key, value in held.values()]


def _offset_key_or_none(key: bytes) -> OffsetKey | None:
    try:
        decoded = decode_key(key)
    except UnknownRecordVersionError:
        return None
    return decoded if isinstance(decoded, OffsetKey) else None
