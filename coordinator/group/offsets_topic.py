"""How the group coordinator uses `__consumer_offsets`: the partition that holds a group, the
records each of its writes makes (commits, group metadata, tombstones), one v2 batch per write,
and the replay of a partition's log, transactions resolved, as Kafka's loader applies it.
The key and value formats are `offsets_records.py`'s. Pure functions, no I/O."""
from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from rafka.coordinator.group.group_messages import CommittedOffset, GroupSnapshot
from rafka.coordinator.group.offsets_records import (
    KeyValue,
    OffsetKey,
    OffsetsRecordError,
    UnknownRecordVersionError,
    decode_key,
    group_metadata_key,
    group_metadata_value,
    offset_commit_key,
    offset_commit_value,
)
from rafka.partition_worker.record_batch import (
    Record,
    decode_records,
    encode_batch,
    iter_batches,
)

# Control records (end of a transaction), key: version int16, type int16.
_CONTROL_ABORT = 0
_CONTROL_COMMIT = 1


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


def encode_offsets_batch(pairs: Sequence[KeyValue], timestamp_ms: int, *,
                         transaction: tuple[int, int, int] | None = None) -> bytes:
    """One v2 batch of the records, ready to append to a `__consumer_offsets` partition:
    no compression (offsets.topic.compression.codec's default), CreateTime `timestamp_ms`,
    no producer id, offsets from 0 (the leader assigns the real ones). Kafka writes every
    commit or group update as one such batch, so it is applied all or nothing. With
    `transaction` (producer id, epoch, base sequence), a TxnOffsetCommit's transactional batch.
    Raises ValueError for no records."""
    if not pairs:
        raise ValueError("a __consumer_offsets batch needs at least one record")
    records = [Record(i, timestamp_ms, key, value) for i, (key, value) in enumerate(pairs)]
    if transaction is None:
        return encode_batch(records)
    producer_id, producer_epoch, base_sequence = transaction
    return encode_batch(records, producer_id=producer_id, producer_epoch=producer_epoch,
                        base_sequence=base_sequence, is_transactional=True)


# -- records read back -------------------------------------------------------------------------

def replay(batches: bytes | bytearray | memoryview, *,
           open_transactions: dict[int, list[KeyValue]] | None = None,
           on_unreadable: Callable[[str], None] | None = None) -> Iterator[KeyValue]:
    """The (key, value | None) records of a `__consumer_offsets` partition read from its log
    (concatenated v2 batches), in log order, as Kafka's `doLoadGroupsAndOffsets` applies them.

    Offset commits of a transactional batch (TxnOffsetCommit) are held per producer id until
    the transaction's control record, the latest per offset key (a transactional tombstone
    only drops the held commit). COMMIT yields them, except where a non-transactional commit
    of the same offset was written after the transaction's (Kafka keeps the later write);
    ABORT drops them. Held commits of transactions still open at the end go to
    `open_transactions` (producer id -> records) when it is given, and are otherwise dropped.
    Given a non-empty `open_transactions` (the previous chunk's), those are carried in first.
    Control batches yield nothing. A trailing incomplete batch (a read cut at a size limit)
    is ignored. Raises CorruptRecordError for a bad batch (CRC, lengths). A record without a
    key, or a control record or transactional key it cannot read, raises OffsetsRecordError,
    or, when `on_unreadable` is given, is reported to it (with its offset in the message) and
    skipped: a loader must not give up a whole partition for one bad record. Keys of unknown
    versions pass through (the consumer decides: `OffsetStore.apply` skips them, as Kafka's
    loader does).
    """
    def unreadable(reason: str) -> None:
        if on_unreadable is None:
            raise OffsetsRecordError(reason)
        on_unreadable(reason)

    mv = batches if isinstance(batches, memoryview) else memoryview(batches)
    # producer id -> offset key -> (base offset of its batch, key bytes, value bytes)
    pending: dict[int, dict[OffsetKey, tuple[int, bytes, bytes]]] = {}
    if open_transactions:
        # Transactions still open at the end of the previous read of the same log (a load reads
        # it in chunks): carried on, so that a marker in this chunk ends them.
        for pid, pairs in open_transactions.items():
            for key, value in pairs:
                k = _offset_key_or_none(key)
                if k is not None:
                    pending.setdefault(pid, {})[k] = (-1, key, value)
        open_transactions.clear()
    # offset key -> base offset of the batch of its latest non-transactional commit
    last_plain: dict[OffsetKey, int] = {}
    for header in list(iter_batches(mv)):
        _, records = decode_records(mv, header.position)
        if header.is_control:
            if not records:
                continue
            marker = records[0].key
            if marker is None or len(marker) < 4:
                unreadable(f"control record at offset {records[0].offset} has a bad key")
                continue
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
                unreadable(f"record at offset {record.offset} of __consumer_offsets has no key")
                continue
            try:
                k = _offset_key_or_none(record.key) if header.is_transactional or pending else None
            except OffsetsRecordError as e:
                unreadable(f"record at offset {record.offset}: {e}")
                continue
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
