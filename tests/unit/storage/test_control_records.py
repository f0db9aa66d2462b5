"""End-transaction markers: Kafka's control batch written out byte by byte, the key and value
readers' refusals, and which control batches end a transaction."""
from __future__ import annotations

import struct

import crc32c
import pytest
from rafka.common.errors import InvalidRecordError
from rafka.partition_worker.control_records import (
    ControlRecordType,
    EndTransactionMarker,
    control_type_id,
    decode_marker,
    encode_marker_batch,
    marker_of_batch,
)
from rafka.partition_worker.record_batch import Record, encode_batch, iter_batches, parse_header

TS = 1_700_000_000_000


def kafka_marker_batch(type_id: int, coordinator_epoch: int, producer_id: int, epoch: int) -> bytes:
    """MemoryRecords.withEndTransactionMarker(0, TS, -1, producerId, epoch, marker), by hand."""
    body = (b"\x00"                      # record attributes
            + b"\x00"                    # timestamp delta (varlong 0)
            + b"\x00"                    # offset delta (varint 0)
            + b"\x08" + struct.pack(">hh", 0, type_id)              # key: length 4 (zigzag 8)
            + b"\x0c" + struct.pack(">hi", 0, coordinator_epoch)    # value: length 6 (zigzag 12)
            + b"\x00")                   # no headers
    record = bytes([len(body) * 2]) + body
    after_crc = (struct.pack(">hiqqqhii", 0x30, 0, TS, TS, producer_id, epoch, -1, 1) + record)
    head = struct.pack(">qiib", 0, 4 + 1 + 4 + len(after_crc), -1, 2)
    return head + struct.pack(">I", crc32c.crc32c(after_crc)) + after_crc


@pytest.mark.parametrize("control_type", [ControlRecordType.ABORT, ControlRecordType.COMMIT])
def test_marker_batch_is_kafkas_bytes(control_type):
    marker = EndTransactionMarker(control_type, 5)
    batch = encode_marker_batch(marker, producer_id=4000, producer_epoch=3, timestamp_ms=TS)
    assert batch == kafka_marker_batch(int(control_type), 5, 4000, 3)
    assert len(batch) == 61 + 17   # Kafka's CURRENT_END_TXN_SCHEMA_RECORD_SIZE is 17
    header = parse_header(batch)
    assert header.is_control and header.is_transactional and header.base_sequence == -1
    assert marker_of_batch(batch, header) == marker


def test_marker_key_and_value_bytes():
    m = EndTransactionMarker(ControlRecordType.COMMIT, 0x01020304)
    assert m.key_bytes() == b"\x00\x00\x00\x01"
    assert m.value_bytes() == b"\x00\x00\x01\x02\x03\x04"
    assert not m.is_abort and EndTransactionMarker(ControlRecordType.ABORT, 0).is_abort


def test_a_newer_version_is_read_as_v0_with_trailing_bytes():
    m = decode_marker(struct.pack(">hh", 3, 0) + b"x", struct.pack(">hi", 7, 9) + b"more")
    assert m == EndTransactionMarker(ControlRecordType.ABORT, 9)


@pytest.mark.parametrize("key,value,match", [
    (None, b"\x00" * 6, "at least 4"),
    (b"\x00\x00\x00", b"\x00" * 6, "at least 4"),
    (struct.pack(">hh", -1, 1), b"\x00" * 6, "version -1"),
    (struct.pack(">hh", 0, 1), b"\x00" * 5, "at least 6"),
    (struct.pack(">hh", 0, 1), None, "at least 6"),
    (struct.pack(">hh", 0, 1), struct.pack(">hi", -2, 0), "version -2"),
    (struct.pack(">hh", 0, 2), b"\x00" * 6, "not an end transaction marker"),
], ids=["no-key", "short-key", "key-version", "short-value", "no-value", "value-version", "leader-change"])
def test_invalid_markers_are_refused(key, value, match):
    with pytest.raises(InvalidRecordError, match=match):
        decode_marker(key, value)


def test_only_commit_and_abort_are_markers():
    with pytest.raises(ValueError):
        EndTransactionMarker(ControlRecordType.LEADER_CHANGE, 0)
    assert control_type_id(struct.pack(">hh", 0, 6)) == ControlRecordType.KRAFT_VOTERS


def test_a_leader_change_or_empty_control_batch_ends_no_transaction():
    leader_change = encode_batch([Record(0, TS, struct.pack(">hh", 0, 2), b"\x00\x00")], is_control=True)
    assert marker_of_batch(leader_change, parse_header(leader_change)) is None
    empty = encode_batch([], is_control=True, is_transactional=True)
    (h,) = list(iter_batches(empty))
    assert marker_of_batch(empty, h) is None


def test_a_data_batch_is_not_asked_for_a_marker():
    data = encode_batch([Record(0, TS, b"k", b"v")])
    with pytest.raises(ValueError):
        marker_of_batch(data, parse_header(data))
