"""Producer snapshot files: what a partition's producer state is written to and read back from.

On-disk snapshot `<20-digit offset>.snapshot`, Kafka's ProducerStateManager format v1,
big-endian:

    int16  version = 1
    uint32 crc        CRC-32C of every byte after this field
    int32  count
    count x (int64 producer_id, int16 epoch, int32 last_sequence, int64 last_offset,
             int32 offset_delta, int64 timestamp, int32 coordinator_epoch,
             int64 current_txn_first_offset (-1: none))

The offset in the name is the log end offset the state covers (exclusive).

The dedupe window survives a snapshot: rafka writes one entry per *retained batch* (up to
`NUM_BATCHES_TO_RETAIN` per producer, oldest first, so each producer's newest batch is its
last entry), where Kafka writes one entry per producer (its last batch) and loses the older
four at every restart. rafka rests idle replicas as routine (the actor exits after a
snapshot), so a retried in-flight batch must still be recognised after a wake. The file is
still Kafka's format v1, entry for entry; Kafka's `readSnapshot` takes any number of
entries and `loadFromSnapshot` puts them into its producer map in file order, so a Kafka
broker reading a rafka snapshot keeps each producer's last entry: exactly the entry Kafka
would have written. To keep that true under Kafka's per-entry expiry filter, an older
entry's timestamp is written as at most the producer's last timestamp (an older entry is
never kept while the newest one expires). A Kafka-written snapshot loads as one batch per
producer, as in Kafka: duplicate detection then covers that batch only, and an older retry
gets OUT_OF_ORDER_SEQUENCE_NUMBER.
"""
from __future__ import annotations

import os
import re
import struct
from pathlib import Path

import crc32c as _crc32c

from rafka.common.errors import ErrorCode, KafkaError
from rafka.partition_worker.producer_entries import (
    NO_SEQUENCE, NUM_BATCHES_TO_RETAIN, BatchMetadata, ProducerStateEntry, decrement_sequence,
)

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_SNAPSHOT_NAME = re.compile(r"^(\d{20})\.snapshot$")
# version int16, crc uint32, entry count int32 (Kafka's ArrayOf length)
_SNAPSHOT_HEADER = struct.Struct(">hIi")
_CRC_START = 6  # CRC-32C covers everything after version and crc
# producer_id, epoch, last_sequence, last_offset, offset_delta, timestamp,
# coordinator_epoch, current_txn_first_offset: Kafka's PRODUCER_SNAPSHOT_ENTRY_SCHEMA order.
_SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")


class CorruptSnapshotError(KafkaError):
    """A producer snapshot that is short, has an unknown version or a bad CRC. Never leaves
    the producer state: `ProducerStateManager.load_latest_snapshot` logs it and tries an older
    snapshot."""

    code = ErrorCode.UNKNOWN_SERVER_ERROR


def snapshot_file_name(offset: int) -> str:
    """`00000000000000000042.snapshot`, as Kafka's `LogFileUtils.producerSnapshotFile`."""
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


def list_snapshots(directory: str | os.PathLike) -> list[tuple[int, Path]]:
    """(offset, path) of every snapshot file in `directory`, oldest first; [] if none."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = []
    for entry in directory.iterdir():
        match = _SNAPSHOT_NAME.match(entry.name)
        if match and entry.is_file():
            found.append((int(match.group(1)), entry))
    return sorted(found)


def encode_snapshot(producers: dict[int, ProducerStateEntry]) -> bytes:
    """The snapshot bytes of `producers` (format in the module docstring): one entry
    per retained batch, each producer's oldest first; one entry without batch metadata
    (last offset -1) for a producer with no batch."""
    body = bytearray(_SNAPSHOT_HEADER.size)
    count = 0
    for pid, entry in producers.items():
        txn_first = -1 if entry.current_txn_first_offset is None else entry.current_txn_first_offset
        if not entry.batches:
            body += _SNAPSHOT_ENTRY.pack(pid, entry.producer_epoch, NO_SEQUENCE, -1, 0,
                                         entry.last_timestamp, entry.coordinator_epoch, txn_first)
            count += 1
            continue
        newest = len(entry.batches) - 1
        for i, batch in enumerate(entry.batches):
            timestamp = entry.last_timestamp if i == newest else min(batch.timestamp, entry.last_timestamp)
            body += _SNAPSHOT_ENTRY.pack(pid, entry.producer_epoch, batch.last_seq, batch.last_offset,
                                         batch.offset_delta, timestamp, entry.coordinator_epoch, txn_first)
            count += 1
    _SNAPSHOT_HEADER.pack_into(body, 0, SNAPSHOT_VERSION, 0, count)
    crc = _crc32c.crc32c(bytes(body[_CRC_START:]))
    struct.pack_into(">I", body, 2, crc)
    return bytes(body)

def _snapshot_rows(data: bytes) -> list[tuple[int, int, int, int, int, int, int, int]]:
    """The entry tuples of a snapshot in file order (`_SNAPSHOT_ENTRY`'s fields), after
    checking its header, CRC and length; raises `CorruptSnapshotError`."""
    if len(data) < _SNAPSHOT_HEADER.size:
        raise CorruptSnapshotError(f"snapshot of {len(data)} bytes is shorter than its header")
    version, crc, count = _SNAPSHOT_HEADER.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"unknown snapshot version {version}")
    computed = _crc32c.crc32c(bytes(data[_CRC_START:]))
    if crc != computed:
        raise CorruptSnapshotError(f"snapshot CRC {crc} does not match computed {computed}")
    expected = _SNAPSHOT_HEADER.size + max(count, 0) * _SNAPSHOT_ENTRY.size
    if count < 0 or len(data) != expected:
        raise CorruptSnapshotError(f"snapshot has {len(data)} bytes for {count} entries")
    return list(_SNAPSHOT_ENTRY.iter_unpack(memoryview(data)[_SNAPSHOT_HEADER.size:]))

def _batch_of(last_seq: int, last_offset: int, offset_delta: int, timestamp: int) -> BatchMetadata:
    return BatchMetadata(first_seq=decrement_sequence(last_seq, offset_delta), last_seq=last_seq,
                         first_offset=last_offset - offset_delta, last_offset=last_offset,
                         timestamp=timestamp)

def decode_snapshot(data: bytes) -> list[ProducerStateEntry]:
    """The entries of a snapshot as stored, each with at most one batch (Kafka's
    `readSnapshot`; `decode_producers` regroups them per producer). Raises
    `CorruptSnapshotError` on a short file, unknown version, bad CRC, negative count or
    trailing bytes."""
    entries = []
    for (pid, epoch, last_seq, last_offset, offset_delta, timestamp, coordinator_epoch,
         txn_first) in _snapshot_rows(data):
        entry = ProducerStateEntry(
            pid, epoch, coordinator_epoch, timestamp,
            current_txn_first_offset=txn_first if txn_first >= 0 else None)
        if last_offset >= 0:  # Kafka: no batch metadata when the last offset is -1
            entry.batches.append(_batch_of(last_seq, last_offset, offset_delta, timestamp))
        entries.append(entry)
    return entries

def decode_producers(data: bytes) -> dict[int, ProducerStateEntry]:
    """Producer id -> state, from a snapshot's entries in file order: a producer's entries
    of one epoch with increasing offsets are its retained batches (the last five kept); an
    entry of another epoch, without batch metadata or not above the previous batch starts
    that producer afresh, so the last entry always wins, as Kafka's `loadProducerEntry`.
    The epoch, timestamp, coordinator epoch and transaction offset are the last entry's.
    Raises `CorruptSnapshotError` as `decode_snapshot`."""
    merged: dict[int, ProducerStateEntry] = {}
    for (pid, epoch, last_seq, last_offset, offset_delta, timestamp, coordinator_epoch,
         txn_first) in _snapshot_rows(data):
        current = merged.get(pid)
        if (current is None or last_offset < 0 or current.producer_epoch != epoch
                or not current.batches or last_offset - offset_delta <= current.batches[-1].last_offset):
            current = merged[pid] = ProducerStateEntry(pid, epoch)
        if last_offset >= 0:
            if len(current.batches) == NUM_BATCHES_TO_RETAIN:
                current.batches.popleft()
            current.batches.append(_batch_of(last_seq, last_offset, offset_delta, timestamp))
        current.last_timestamp = timestamp
        current.coordinator_epoch = coordinator_epoch
        current.current_txn_first_offset = txn_first if txn_first >= 0 else None
    return merged

def write_snapshot(producers: dict[int, ProducerStateEntry], snapshot_dir: str | os.PathLike, offset: int) -> Path:
    """Write `producers` as `<offset>.snapshot` in `snapshot_dir` durably (temp file, fsync,
    rename) and return its path. Overwrites a snapshot at the same offset."""
    path = Path(snapshot_dir) / snapshot_file_name(offset)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(encode_snapshot(producers))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


@staticmethod
def delete_snapshots_after(snapshot_dir: str | os.PathLike, offset: int) -> list[int]:
    """Delete snapshots whose offset is above `offset`; returns the offsets deleted."""
    deleted = []
    for snap_offset, path in list_snapshots(snapshot_dir):
        if snap_offset > offset:
            path.unlink(missing_ok=True)
            deleted.append(snap_offset)
    return deleted

@staticmethod
def delete_snapshots_before(snapshot_dir: str | os.PathLike, offset: int) -> list[int]:
    """Delete snapshots whose offset is below `offset` (exclusive, as Kafka's
    `deleteSnapshotsBefore`); returns the offsets deleted."""
    deleted = []
    for snap_offset, path in list_snapshots(snapshot_dir):
        if snap_offset < offset:
            path.unlink(missing_ok=True)
            deleted.append(snap_offset)
    return deleted
