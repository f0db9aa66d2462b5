"""Record batch v2: codecs, validation refusals, offset assignment, kafka-python byte equality."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings, strategies as st

from rafka.common.errors import (
    CorruptRecordError, ErrorCode, InvalidRecordError, MessageTooLargeError, UnsupportedCompressionTypeError,
)
from rafka.partition_worker.record_batch import (
    RECORD_BATCH_OVERHEAD, Compression, Record, TimestampType, assign_offsets, decode_records, encode_batch,
    parse_header, validate_batches,
)

CODECS = list(Compression)


def make_records(n: int, base_offset: int = 0, ts: int = 1_700_000_000_000) -> list[Record]:
    return [Record(base_offset + i, ts + i, f"key-{i}".encode(), b"value-%d-" % i * 20,
                   (("trace", b"abc"), ("empty", None)) if i % 2 else ())
            for i in range(n)]


@pytest.mark.parametrize("codec", CODECS, ids=[c.name for c in CODECS])
def test_round_trip_every_codec(codec):
    records = make_records(50, base_offset=7)
    batch = encode_batch(records, base_offset=7, compression=codec)
    header, decoded = decode_records(batch)
    assert decoded == records
    assert header.compression == codec
    assert header.base_offset == 7 and header.last_offset == 56 and header.records_count == 50
    assert header.max_timestamp == records[-1].timestamp
    assert header.size == len(batch)
    assert validate_batches(batch, 1 << 20) == [header]


record_st = st.builds(
    lambda key, value, ts_delta, headers: (key, value, ts_delta, tuple(headers)),
    st.none() | st.binary(max_size=40),
    st.none() | st.binary(max_size=200),
    st.integers(min_value=-(1 << 40), max_value=1 << 40),
    st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=20)), max_size=3),
)


@settings(max_examples=60, deadline=None)
@given(items=st.lists(record_st, min_size=1, max_size=20), codec=st.sampled_from(CODECS),
       base=st.integers(min_value=0, max_value=1 << 50), first_ts=st.integers(min_value=0, max_value=1 << 42))
def test_round_trip_property(items, codec, base, first_ts):
    records = [Record(base + i, first_ts + (ts_delta if i else 0), key, value, headers)
               for i, (key, value, ts_delta, headers) in enumerate(items)]
    batch = encode_batch(records, base_offset=base, compression=codec, producer_id=5, producer_epoch=1,
                         base_sequence=9)
    header, decoded = decode_records(batch)
    assert decoded == records
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (5, 1, 9)
    assert header.max_timestamp == max(r.timestamp for r in records)


def _with_body(body: bytes, count: int = 1) -> bytearray:
    """An uncompressed batch of `count` records whose records section is `body`, CRC recomputed."""
    batch = bytearray(encode_batch([Record(i, 0, None, b"") for i in range(count)]))
    batch[RECORD_BATCH_OVERHEAD:] = body
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    return _recrc(batch)


def test_a_record_cut_inside_a_varint_is_corrupt():
    with pytest.raises(CorruptRecordError, match="varint runs past the end"):
        decode_records(_with_body(b"\xff\xff"))


def test_a_record_length_longer_than_an_int32_varint_is_corrupt():
    # Kafka reads the record length as a varint (int32): 5 bytes at most, even for a value
    # that fits, so a 6-byte encoding of 0 is refused.
    with pytest.raises(CorruptRecordError, match="varint longer than 5 bytes"):
        decode_records(_with_body(b"\x80\x80\x80\x80\x80\x00"))


def test_a_timestamp_delta_is_a_varlong():
    ts = 1_700_000_000_000
    records = [Record(0, ts, None, b"a"), Record(1, ts + (1 << 40), None, b"b")]  # delta needs 6 bytes
    assert decode_records(encode_batch(records))[1] == records


def test_log_append_time_gives_max_timestamp_to_every_record():
    batch = encode_batch(make_records(3), timestamp_type=TimestampType.LOG_APPEND_TIME, max_timestamp=42)
    header, decoded = decode_records(batch)
    assert header.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in decoded] == [42, 42, 42]


def test_flags_in_attributes():
    batch = encode_batch(make_records(1), producer_id=1, producer_epoch=0, base_sequence=0,
                         is_transactional=True, compression=Compression.LZ4)
    h = parse_header(batch)
    assert h.is_transactional and not h.is_control and h.compression == Compression.LZ4
    assert h.timestamp_type is TimestampType.CREATE_TIME


def test_raw_snappy_is_read_too():
    import cramjam
    records = make_records(4)
    plain = encode_batch(records)
    body = bytes(cramjam.snappy.compress_raw(plain[61:]))
    batch = bytearray(plain[:61] + body)
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    struct.pack_into(">h", batch, 21, Compression.SNAPPY)
    import crc32c
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    assert decode_records(batch)[1] == records


def _kafka_python_batch(records, codec):
    from kafka.record.default_records import DefaultRecordBatchBuilder
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for r in records:
        assert builder.append(r.offset, r.timestamp, r.key, r.value, list(r.headers)) is not None
    return bytes(builder.build())


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.LZ4, Compression.ZSTD],
                         ids=["none", "lz4", "zstd"])
def test_bytes_equal_kafka_python_builder(codec):
    records = make_records(30)
    ours = encode_batch(records, compression=codec, partition_leader_epoch=0)  # kafka-python writes 0
    assert ours == _kafka_python_batch(records, codec)


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.LZ4, Compression.ZSTD], ids=["gzip", "lz4", "zstd"])
def test_kafka_python_reads_our_batches(codec):
    from kafka.record.default_records import DefaultRecordBatch
    records = make_records(10)
    batch = DefaultRecordBatch(bytearray(encode_batch(records, compression=codec)))
    assert batch.validate_crc()
    got = [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in batch]
    assert got == [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records]


# -- refusals ----------------------------------------------------------------------------

def test_several_batches_are_split():
    buf = encode_batch(make_records(3)) + encode_batch(make_records(2), compression=Compression.GZIP)
    headers = validate_batches(memoryview(buf), 1 << 20)
    assert [h.records_count for h in headers] == [3, 2]
    assert headers[1].position == headers[0].size


def test_refuses_empty_buffer():
    with pytest.raises(InvalidRecordError) as e:
        validate_batches(b"", 1 << 20)
    assert e.value.code is ErrorCode.INVALID_RECORD


def test_refuses_bad_crc():
    batch = bytearray(encode_batch(make_records(3)))
    batch[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError) as e:
        validate_batches(batch, 1 << 20)
    assert e.value.code is ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("cut", [1, 10, 16, 30, 61, -1])
def test_refuses_truncated_batch(cut):
    batch = encode_batch(make_records(3))
    with pytest.raises(CorruptRecordError):
        validate_batches(batch[:cut], 1 << 20)


def test_refuses_trailing_partial_batch():
    batch = encode_batch(make_records(3))
    with pytest.raises(CorruptRecordError):
        validate_batches(batch + batch[:20], 1 << 20)


def test_refuses_absurd_length():
    batch = bytearray(encode_batch(make_records(3)))
    struct.pack_into(">i", batch, 8, 10)
    with pytest.raises(CorruptRecordError):
        validate_batches(batch, 1 << 20)
    struct.pack_into(">i", batch, 8, -5)
    with pytest.raises(CorruptRecordError):
        validate_batches(batch, 1 << 20)


def test_refuses_garbage():
    with pytest.raises((CorruptRecordError, InvalidRecordError)):
        validate_batches(bytes(range(256)) * 4, 1 << 20)


def test_refuses_too_large_batch():
    batch = encode_batch(make_records(10))
    validate_batches(batch, len(batch))
    with pytest.raises(MessageTooLargeError) as e:
        validate_batches(batch, len(batch) - 1)
    assert e.value.code is ErrorCode.MESSAGE_TOO_LARGE


@pytest.mark.parametrize("magic", [0, 1, 3])
def test_refuses_other_magic(magic):
    batch = bytearray(encode_batch(make_records(3)))
    batch[16] = magic
    with pytest.raises(InvalidRecordError) as e:
        validate_batches(batch, 1 << 20)
    assert e.value.code is ErrorCode.INVALID_RECORD


def _recrc(batch: bytearray) -> bytearray:
    import crc32c
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return batch


def test_refuses_unknown_codec():
    batch = bytearray(encode_batch(make_records(3)))
    struct.pack_into(">h", batch, 21, 6)
    with pytest.raises(UnsupportedCompressionTypeError):
        validate_batches(_recrc(batch), 1 << 20)


def test_refuses_inconsistent_count_from_client_only():
    batch = bytearray(encode_batch(make_records(3)))
    struct.pack_into(">i", batch, 57, 5)
    _recrc(batch)
    with pytest.raises(InvalidRecordError):
        validate_batches(batch, 1 << 20)
    assert len(validate_batches(batch, 1 << 20, from_client=False)) == 1


def test_refuses_empty_batch_and_control_batch_from_client():
    with pytest.raises(InvalidRecordError):
        validate_batches(encode_batch([]), 1 << 20)
    with pytest.raises(InvalidRecordError):
        validate_batches(encode_batch(make_records(1), is_control=True), 1 << 20)


def test_assign_offsets_changes_only_base_offset_and_leader_epoch():
    first, second = encode_batch(make_records(3)), encode_batch(make_records(4), compression=Compression.ZSTD)
    original = first + second
    buf = bytearray(original)
    assert assign_offsets(buf, 1000, 17) == 1007
    for start, batch in ((0, first), (len(first), second)):
        changed = {i for i in range(len(batch)) if buf[start + i] != original[start + i]}
        assert changed <= set(range(0, 8)) | set(range(12, 16))
    h1, h2 = validate_batches(buf, 1 << 20)  # CRCs still hold
    assert (h1.base_offset, h1.partition_leader_epoch, h2.base_offset, h2.last_offset) == (1000, 17, 1003, 1006)
    assert [r.offset for r in decode_records(buf, h2.position)[1]] == [1003, 1004, 1005, 1006]


def test_assign_offsets_refuses_read_only_buffer():
    with pytest.raises(TypeError):
        assign_offsets(encode_batch(make_records(1)), 0, 0)
