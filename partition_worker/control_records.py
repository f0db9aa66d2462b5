"""Control batches that end a transaction (KIP-98): COMMIT and ABORT markers, Kafka's format.

A transaction's end is written to each of its partitions as a *control batch* of one record
(`MemoryRecords.withEndTransactionMarker`): attributes have the control and transactional
bits, no compression, CreateTime; the batch carries the producer id and epoch of the
transaction, base sequence -1; the record's offset delta is 0 and its timestamp the marker's.

    key   (ControlRecordType, v0):    int16 version = 0, int16 type (0 ABORT, 1 COMMIT)
    value (EndTransactionMarker, v0): int16 version = 0, int32 coordinator_epoch

As Kafka's readers: a key or value shorter than its v0 size, or with a negative version, is
invalid; a newer version is read as v0 (its first fields are v0's). Other control types
(LEADER_CHANGE and the KRaft snapshot ones) are not transaction markers.

Pure functions, no I/O.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from rafka.common.errors import InvalidRecordError
from rafka.partition_worker.record_batch import (
    NO_SEQUENCE,
    BatchHeader,
    Record,
    decode_records,
    encode_batch,
)

CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0
_CONTROL_KEY = struct.Struct(">hh")       # version, type
_MARKER_VALUE = struct.Struct(">hi")      # version, coordinator epoch


class ControlRecordType(IntEnum):
    """Kafka's `ControlRecordType` ids (UNKNOWN is -1 there: any id not listed)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@dataclass(frozen=True)
class EndTransactionMarker:
    """A COMMIT or ABORT marker and the epoch of the coordinator that wrote it; a partition
    refuses a marker from an older coordinator epoch (TRANSACTION_COORDINATOR_FENCED)."""

    control_type: ControlRecordType
    coordinator_epoch: int

    def __post_init__(self) -> None:
        if self.control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            raise ValueError(f"invalid control record type for an end transaction marker: {self.control_type}")

    @property
    def is_abort(self) -> bool:
        return self.control_type is ControlRecordType.ABORT

    def key_bytes(self) -> bytes:
        return _CONTROL_KEY.pack(CONTROL_KEY_VERSION, self.control_type)

    def value_bytes(self) -> bytes:
        return _MARKER_VALUE.pack(END_TXN_MARKER_VERSION, self.coordinator_epoch)


def control_type_id(key: bytes | memoryview | None) -> int:
    """The type id in a control record's key (Kafka's `ControlRecordType.parseTypeId`).
    Raises `InvalidRecordError` for a missing or short key or a negative version."""
    return _read_v0(_CONTROL_KEY, key, "control record key")


def _read_v0(layout: struct.Struct, data: bytes | memoryview | None, what: str) -> int:
    """The field after the int16 version of a key or value read as v0 (any newer version
    starts with v0's fields); `InvalidRecordError` when it is short or the version negative."""
    if data is None or len(data) < layout.size:
        raise InvalidRecordError(f"{what} must have at least {layout.size} bytes, "
                                 f"found {0 if data is None else len(data)}")
    version, field = layout.unpack_from(data)
    if version < 0:
        raise InvalidRecordError(f"invalid version {version} of a {what}")
    return field


def decode_marker(key: bytes | memoryview | None, value: bytes | memoryview | None) -> EndTransactionMarker:
    """The marker of a control record (Kafka's `EndTransactionMarker.deserialize`). Raises
    `InvalidRecordError` when the record is no COMMIT/ABORT or its key or value is invalid."""
    type_id = control_type_id(key)
    if type_id not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise InvalidRecordError(f"control record type {type_id} is not an end transaction marker")
    coordinator_epoch = _read_v0(_MARKER_VALUE, value, "end transaction marker value")
    return EndTransactionMarker(ControlRecordType(type_id), coordinator_epoch)


def encode_marker_batch(marker: EndTransactionMarker, producer_id: int, producer_epoch: int,
                        timestamp_ms: int, *, base_offset: int = 0, partition_leader_epoch: int = -1) -> bytes:
    """The control batch a leader appends for `marker` (offsets from `base_offset`; the leader
    assigns the real one as for any batch)."""
    record = Record(base_offset, timestamp_ms, marker.key_bytes(), marker.value_bytes())
    return encode_batch([record], base_offset, producer_id=producer_id, producer_epoch=producer_epoch,
                        base_sequence=NO_SEQUENCE, is_transactional=True, is_control=True,
                        partition_leader_epoch=partition_leader_epoch)


def marker_of_batch(buf: bytes | bytearray | memoryview, header: BatchHeader) -> EndTransactionMarker | None:
    """The marker of the control batch at `header.position` in `buf`; None for a control batch
    of no records or of another type (LEADER_CHANGE...), which ends no transaction, as Kafka's
    `ProducerAppendInfo.append` reads only a first record. Raises `InvalidRecordError` for an
    invalid key or value, `CorruptRecordError` for a bad batch; ValueError for a data batch."""
    if not header.is_control:
        raise ValueError(f"batch at offset {header.base_offset} is not a control batch")
    _, records = decode_records(buf, header.position)
    if not records:
        return None
    first = records[0]
    if control_type_id(first.key) not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        return None
    return decode_marker(first.key, first.value)


__all__ = [
    "ControlRecordType", "EndTransactionMarker", "control_type_id", "decode_marker",
    "encode_marker_batch", "marker_of_batch",
]
