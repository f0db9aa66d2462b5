"""Kafka record batches, magic v2 (KIP-98): header parsing, validation, offset assignment, codecs.

Layout of one batch (big-endian), as Kafka's `DefaultRecordBatch`:

    offset  size  field
    0       8     baseOffset             set by the broker (not under the CRC)
    8       4     batchLength            bytes after this field (size = 12 + batchLength)
    12      4     partitionLeaderEpoch   set by the broker (not under the CRC)
    16      1     magic                  2
    17      4     crc                    CRC-32C of bytes 21..end
    21      2     attributes             bits 0-2 codec, 3 timestamp type, 4 transactional, 5 control,
                                         6 delete horizon set (KIP-534: baseTimestamp holds it)
    23      4     lastOffsetDelta
    27      8     baseTimestamp
    35      8     maxTimestamp
    43      8     producerId
    51      2     producerEpoch
    53      4     baseSequence
    57      4     recordsCount
    61      ...   records (compressed as a whole when the codec is not 0)

The hot path (`validate_batches`, `assign_offsets`) reads headers only and checksums a
memoryview slice, so a produce request's bytes reach the disk without a copy.
`decode_records` and `encode_batch` (decompression, record parsing) serve tests, tools,
timestamp lookups, our own client, and the produce checks of compacted topics and CreateTime
bounds; one batch decompresses to `MAX_DECOMPRESSED_BATCH_BYTES` at most (decompression bombs).
"""
from __future__ import annotations

import gzip
import io
import struct
import zlib
from dataclasses import dataclass
from enum import IntEnum
from typing import Iterable, Sequence

import crc32c as _crc32c

from rafka.common.errors import (
    CorruptRecordError, InvalidRecordError, MessageTooLargeError, UnsupportedCompressionTypeError,
)
from rafka.common.varint import VarintError, read_varint, read_varlong, write_varint, write_varlong

MAGIC_V2 = 2
LOG_OVERHEAD = 12                 # baseOffset + batchLength
RECORD_BATCH_OVERHEAD = 61        # header size up to and including recordsCount
MIN_BATCH_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD  # 49
HEADER_SIZE_UP_TO_MAGIC = 17

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40  # KIP-534: set by the log cleaner on batches it kept tombstones in

HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
_LENGTH_AND_MAGIC = struct.Struct(">qi")  # baseOffset, batchLength
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")

# xerial snappy framing (snappy-java's SnappyOutputStream, written by the Java client and
# librdkafka): 8-byte magic, int32 version 1, int32 compatible version 1, then blocks of
# int32 compressed length + raw snappy. 32 KiB of input per block, as snappy-java.
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK_SIZE = 32 * 1024

# Kafka streams a compressed batch's records and never holds them all; we decompress a batch
# whole (`decode_records`), so a few MiB of zeros sent as gzip would expand to gigabytes in a
# replica (issue 23). The bound sits far above what clients send: librdkafka's batch.size
# (1 MB) counts uncompressed bytes; the Java producer's batch.size (16 KiB, often raised to
# 1 MiB) counts estimated compressed bytes, so 64 MiB is 64x compression of such a batch, more
# than real records give. It is not higher because decoded records cost more again as Python
# objects (about 13x for tiny records). A batch over it is refused as CORRUPT_MESSAGE.
MAX_DECOMPRESSED_BATCH_BYTES = 64 << 20
# Codecs decompress this much at a time (as zstandard's readall), so a bomb costs at most the
# bound plus one chunk, and a batch of up to 1 MiB comes out in one piece, without a join.
_DECOMPRESS_CHUNK = 1 << 20
_LZ4_MAX_EXPANSION = 255


class Compression(IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The fixed 61-byte header of one v2 batch; `position` is where it starts in its buffer/file."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    position: int = 0

    @property
    def size(self) -> int:
        """Bytes of the whole batch: 12 + batchLength."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        """The codec id (bits 0-2); a `Compression` member when it is one Kafka knows."""
        codec = self.attributes & COMPRESSION_CODEC_MASK
        return Compression(codec) if codec <= Compression.ZSTD else codec

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType.LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def delete_horizon_ms(self) -> int | None:
        """KIP-534: when the cleaner may drop this batch's tombstones (its baseTimestamp); None if unset."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_FLAG_MASK else None


@dataclass(frozen=True, slots=True)
class Record:
    """One record with its absolute offset and timestamp; header keys are UTF-8 text."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse the batch header at `pos` without checking it (see `validate_batches`).

    Raises CorruptRecordError when fewer than 61 bytes remain.
    """
    if len(buf) - pos < RECORD_BATCH_OVERHEAD:
        raise CorruptRecordError(
            f"Record batch header at position {pos} is truncated: {len(buf) - pos} bytes remain, "
            f"{RECORD_BATCH_OVERHEAD} needed")
    return BatchHeader(*HEADER_STRUCT.unpack_from(buf, pos), pos)


def compute_crc(buf: bytes | bytearray | memoryview, pos: int, size: int) -> int:
    """CRC-32C of a batch's bytes from its attributes to its end (no copy for a memoryview)."""
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    return _crc32c.crc32c(mv[pos + ATTRIBUTES_OFFSET:pos + size])


def validate_batches(buf: bytes | bytearray | memoryview, max_batch_bytes: int, *,
                     from_client: bool = True) -> list[BatchHeader]:
    """Split a produce request's records into batches and check each one; headers only.

    Refusals, with Kafka 3.9's codes:
    - empty buffer: InvalidRecordError (INVALID_RECORD, "must have at least one record batch");
    - magic other than 2: InvalidRecordError (INVALID_RECORD), as `ProduceRequest.validateRecords`
      for produce v3+;
    - batchLength < 49, a header or batch cut short: CorruptRecordError (CORRUPT_MESSAGE);
    - a batch (12 + batchLength) above `max_batch_bytes`: MessageTooLargeError (MESSAGE_TOO_LARGE),
      checked before the CRC as Kafka does;
    - CRC-32C mismatch: CorruptRecordError (CORRUPT_MESSAGE);
    - codec id 5-7: UnsupportedCompressionTypeError (UNSUPPORTED_COMPRESSION_TYPE);
    - with `from_client` (LogValidator.validateBatch for AppendOrigin.CLIENT): recordsCount <= 0,
      lastOffsetDelta < 0, lastOffsetDelta + 1 != recordsCount, a control batch, or a producer
      id without a base sequence: InvalidRecordError (INVALID_RECORD).
    """
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    end = len(mv)
    if end == 0:
        raise InvalidRecordError("Produce requests must have at least one record batch per partition")
    headers: list[BatchHeader] = []
    pos = 0
    while pos < end:
        remaining = end - pos
        if remaining < HEADER_SIZE_UP_TO_MAGIC:
            raise CorruptRecordError(f"Record batch at position {pos} is truncated: only {remaining} bytes")
        magic = mv[pos + MAGIC_OFFSET]
        if magic != MAGIC_V2:
            raise InvalidRecordError(
                f"Produce requests are only allowed to contain record batches with magic version 2, "
                f"got magic {magic} at position {pos}")
        _, length = _LENGTH_AND_MAGIC.unpack_from(mv, pos)
        if length < MIN_BATCH_LENGTH:
            raise CorruptRecordError(
                f"Record batch is corrupt (the size {length + LOG_OVERHEAD} is smaller than the minimum "
                f"allowed overhead {RECORD_BATCH_OVERHEAD})")
        size = LOG_OVERHEAD + length
        if size > max_batch_bytes:
            raise MessageTooLargeError(
                f"The record batch size {size} bytes exceeds the maximum allowed batch size {max_batch_bytes}")
        if size > remaining:
            raise CorruptRecordError(
                f"Record batch at position {pos} is truncated: {size} bytes declared, {remaining} present")
        header = BatchHeader(*HEADER_STRUCT.unpack_from(mv, pos), pos)
        actual = _crc32c.crc32c(mv[pos + ATTRIBUTES_OFFSET:pos + size])
        if actual != header.crc:
            raise CorruptRecordError(
                f"Record batch is corrupt (stored crc = {header.crc}, computed crc = {actual})")
        if header.attributes & COMPRESSION_CODEC_MASK > Compression.ZSTD:
            raise UnsupportedCompressionTypeError(
                f"Unknown compression type id: {header.attributes & COMPRESSION_CODEC_MASK}")
        if from_client:
            _check_client_batch(header)
        headers.append(header)
        pos += size
    return headers


def _check_client_batch(h: BatchHeader) -> None:
    if h.last_offset_delta < 0:
        raise InvalidRecordError(f"Batch has an invalid offset range: lastOffsetDelta {h.last_offset_delta}")
    if h.records_count <= 0:
        raise InvalidRecordError(f"Invalid reported count for record batch: {h.records_count}")
    if h.last_offset_delta + 1 != h.records_count:
        raise InvalidRecordError(
            f"Inconsistent batch offset range [0, {h.last_offset_delta}] and count of records {h.records_count}")
    if h.is_control:
        raise InvalidRecordError("Clients are not allowed to write control records")
    if h.producer_id >= 0 and h.base_sequence < 0:
        raise InvalidRecordError(
            f"Invalid sequence number {h.base_sequence} in record batch with producerId {h.producer_id}")


def assign_offsets(buf: bytearray | memoryview, base_offset: int, leader_epoch: int) -> int:
    """Rewrite each batch's baseOffset and partitionLeaderEpoch in place; return the next offset.

    Only bytes 0-7 and 12-15 of each batch change; neither field is under the CRC, so the
    batch stays valid. `buf` must be writable and already validated (`validate_batches`).
    """
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    if mv.readonly:
        raise TypeError("assign_offsets needs a writable buffer (bytearray or writable memoryview)")
    pos, end, next_offset = 0, len(mv), base_offset
    while pos < end:
        _, length = _LENGTH_AND_MAGIC.unpack_from(mv, pos)
        last_offset_delta = _INT32.unpack_from(mv, pos + 23)[0]
        _INT64.pack_into(mv, pos, next_offset)
        _INT32.pack_into(mv, pos + PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)
        next_offset += last_offset_delta + 1
        pos += LOG_OVERHEAD + length
    return next_offset


# -- codecs ----------------------------------------------------------------------------

def compress(codec: int, data: bytes) -> bytes:
    """Compress a batch's records section. Deterministic for a given input (gzip mtime 0)."""
    if codec == Compression.GZIP:
        return gzip.compress(data, compresslevel=6, mtime=0)  # Java's GZIPOutputStream default level
    if codec == Compression.SNAPPY:
        import cramjam
        out = bytearray(_XERIAL_HEADER)
        mv = memoryview(data)
        for i in range(0, len(data), _XERIAL_BLOCK_SIZE):
            block = bytes(cramjam.snappy.compress_raw(mv[i:i + _XERIAL_BLOCK_SIZE]))
            out += _INT32.pack(len(block))
            out += block
        return bytes(out)
    if codec == Compression.LZ4:
        import lz4.frame
        # Independent blocks: Kafka's KafkaLZ4BlockInputStream does not support linked blocks.
        return lz4.frame.compress(data, block_linked=False)
    if codec == Compression.ZSTD:
        import zstandard
        return zstandard.ZstdCompressor().compress(data)
    if codec == Compression.NONE:
        return bytes(data)
    raise UnsupportedCompressionTypeError(f"Unknown compression type id: {codec}")


def decompress(codec: int, data: bytes | memoryview, max_bytes: int = MAX_DECOMPRESSED_BATCH_BYTES) -> bytes:
    """Inverse of `compress`; also reads raw (unframed) snappy and gzip of many members.

    Never produces more than `max_bytes` + 1 bytes: gzip, LZ4 and zstd stream at most
    `_DECOMPRESS_CHUNK` bytes at a time (an LZ4 frame too small to pass the bound is done in
    one call), snappy's declared lengths are checked before anything is decompressed.
    CorruptRecordError on bad input, and when the records expand past `max_bytes` (a
    decompression bomb: a small batch of zeros expands a thousandfold).
    """
    try:
        if codec == Compression.GZIP:
            return _gunzip(data, max_bytes)
        if codec == Compression.SNAPPY:
            return _unsnappy(data, max_bytes)
        if codec == Compression.LZ4:
            return _unlz4(data, max_bytes)
        if codec == Compression.ZSTD:
            return _unzstd(data, max_bytes)
        if codec == Compression.NONE:
            return bytes(data)
    except CorruptRecordError:
        raise
    except Exception as e:  # every codec library has its own error types
        raise CorruptRecordError(f"cannot decompress {Compression(codec).name} records: {e}") from e
    raise UnsupportedCompressionTypeError(f"Unknown compression type id: {codec}")


def _check_expanded(codec: int, size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise CorruptRecordError(
            f"{Compression(codec).name} records expand past {max_bytes} bytes, the most this broker "
            f"decompresses for one batch")


class _BoundedOutput:
    """Chunks of one batch's decompressed records; CorruptRecordError once they pass `max_bytes`."""

    def __init__(self, codec: int, max_bytes: int) -> None:
        self._codec, self._max_bytes = codec, max_bytes
        self._chunks: list[bytes] = []
        self._total = 0

    def room(self) -> int:
        """How much to ask the decompressor for next: a chunk, or one byte past the bound."""
        return min(_DECOMPRESS_CHUNK, self._max_bytes + 1 - self._total)

    def add(self, chunk: bytes) -> None:
        self._total += len(chunk)
        _check_expanded(self._codec, self._total, self._max_bytes)
        self._chunks.append(chunk)

    def join(self) -> bytes:
        return b"".join(self._chunks)  # one chunk is returned as it is, not copied


def _gunzip(data: bytes | memoryview, max_bytes: int) -> bytes:
    """As gzip.decompress (members one after another, zero padding between them skipped)."""
    out = _BoundedOutput(Compression.GZIP, max_bytes)
    while data:
        member = zlib.decompressobj(wbits=31)  # gzip header and trailer; the CRC-32 and size are checked
        while not member.eof:
            want = out.room()
            chunk = member.decompress(data, want)
            out.add(chunk)
            data = member.unconsumed_tail
            if len(chunk) < want and not member.eof:
                raise CorruptRecordError("GZIP records are truncated")
        data = member.unused_data.lstrip(b"\x00")
    return out.join()


def _unsnappy(data: bytes | memoryview, max_bytes: int) -> bytes:
    """Raw snappy, or xerial framing. Raw snappy opens with its uncompressed length (a varint)
    and its decompressor allocates that much first, so the length is checked before."""
    import cramjam
    raw = bytes(data)
    if raw[:8] != _XERIAL_MAGIC:
        _check_expanded(Compression.SNAPPY, cramjam.snappy.decompress_raw_len(raw), max_bytes)
        return bytes(cramjam.snappy.decompress_raw(raw))
    out = bytearray()
    pos = 16  # magic, version, compatible version
    while pos < len(raw):
        (n,) = _INT32.unpack_from(raw, pos)
        pos += 4
        if n < 0 or pos + n > len(raw):
            raise CorruptRecordError("xerial snappy block runs past the end of the batch")
        block = raw[pos:pos + n]
        _check_expanded(Compression.SNAPPY, len(out) + cramjam.snappy.decompress_raw_len(block), max_bytes)
        out += bytes(cramjam.snappy.decompress_raw(block))
        pos += n
    return bytes(out)


def _unlz4(data: bytes | memoryview, max_bytes: int) -> bytes:
    """One LZ4 frame (as Kafka's KafkaLZ4BlockInputStream); bytes after it are ignored.

    LZ4 gives at most 255 bytes for each byte sent (a match length grows by 255 a byte), so a
    frame that small cannot pass `max_bytes` and is decompressed in one call. Larger ones
    stream, about ten times slower: python-lz4 then copies each block into its window.
    """
    import lz4.frame
    if len(data) * _LZ4_MAX_EXPANSION <= max_bytes:
        return lz4.frame.decompress(data)
    frame = lz4.frame.LZ4FrameDecompressor()
    out = _BoundedOutput(Compression.LZ4, max_bytes)
    while not frame.eof:
        want = out.room()
        chunk = frame.decompress(data, max_length=want)
        out.add(chunk)
        data = b""  # the decompressor keeps what it has not used
        if len(chunk) < want and not frame.eof:
            raise CorruptRecordError("LZ4 records are truncated")
    return out.join()


def _unzstd(data: bytes | memoryview, max_bytes: int) -> bytes:
    """Streaming, across frames: frames written by zstd-jni carry no content size, so one-shot
    decompress() fails."""
    import zstandard
    out = _BoundedOutput(Compression.ZSTD, max_bytes)
    with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(bytes(data)), read_across_frames=True) as r:
        while chunk := r.read(out.room()):
            out.add(chunk)
    return out.join()


# -- records -----------------------------------------------------------------------------

def decode_records(buf: bytes | bytearray | memoryview, pos: int = 0, *, verify_crc: bool = True,
                   max_decompressed_bytes: int = MAX_DECOMPRESSED_BATCH_BYTES) -> tuple[BatchHeader, list[Record]]:
    """Parse the whole batch at `pos`, decompressing when needed.

    Under LogAppendTime every record's timestamp is the batch's maxTimestamp (as Kafka's
    clients read it). Raises CorruptRecordError for a bad CRC, a cut batch, a record count
    that does not match, or records that do not parse, and when compressed records expand past
    `max_decompressed_bytes` (see `decompress`); InvalidRecordError for magic != 2.

    The bound holds for batches already in our log too (cleaner, timestamp lookups, dumps,
    group offsets): only produce requests that compact or check CreateTime decode, so a bomb
    sent to any other topic is stored as it came, and must not take down its reader later.
    Such a batch fails its reader instead: ListOffsets by timestamp on it, or cleaning its log
    (the cleaner then leaves the log as it was).
    """
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    if len(mv) - pos >= HEADER_SIZE_UP_TO_MAGIC and mv[pos + MAGIC_OFFSET] != MAGIC_V2:
        raise InvalidRecordError(f"record batch magic {mv[pos + MAGIC_OFFSET]} is not 2")
    h = parse_header(mv, pos)
    if h.batch_length < MIN_BATCH_LENGTH or pos + h.size > len(mv):
        raise CorruptRecordError(f"record batch at position {pos} is truncated or has a bad length")
    if verify_crc and compute_crc(mv, pos, h.size) != h.crc:
        raise CorruptRecordError(f"record batch at position {pos} has a bad CRC-32C")
    body: bytes | memoryview = mv[pos + RECORD_BATCH_OVERHEAD:pos + h.size]
    if h.compression != Compression.NONE:
        body = decompress(h.compression, body, max_decompressed_bytes)
    log_append_time = h.timestamp_type == TimestampType.LOG_APPEND_TIME
    records: list[Record] = []
    p, end = 0, len(body)
    try:
        for _ in range(h.records_count):
            length, p = read_varint(body, p)
            record_end = p + length
            if length < 0 or record_end > end:
                raise CorruptRecordError("record length runs past the end of the batch")
            p += 1  # record attributes, unused
            ts_delta, p = read_varlong(body, p)
            offset_delta, p = read_varint(body, p)
            key, p = _read_bytes(body, p)
            value, p = _read_bytes(body, p)
            header_count, p = read_varint(body, p)
            if header_count < 0:
                raise CorruptRecordError(f"invalid negative header count {header_count}")
            headers = []
            for _ in range(header_count):
                hkey, p = _read_bytes(body, p)
                if hkey is None:
                    raise CorruptRecordError("null header key")
                hvalue, p = _read_bytes(body, p)
                headers.append((hkey.decode("utf-8"), hvalue))
            if p != record_end:
                raise CorruptRecordError("record length does not match its fields")
            timestamp = h.max_timestamp if log_append_time else h.base_timestamp + ts_delta
            records.append(Record(h.base_offset + offset_delta, timestamp, key, value, tuple(headers)))
    except (IndexError, UnicodeDecodeError, VarintError) as e:
        raise CorruptRecordError(f"records do not parse: {e}") from e
    if p != end:
        raise CorruptRecordError(f"{end - p} bytes left after {h.records_count} records")
    return h, records


def _read_bytes(body: bytes | memoryview, p: int) -> tuple[bytes | None, int]:
    n, p = read_varint(body, p)
    if n < 0:
        return None, p
    if p + n > len(body):
        raise CorruptRecordError("field runs past the end of the batch")
    return bytes(body[p:p + n]), p + n


def _write_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        write_varint(-1, out)
    else:
        write_varint(len(data), out)
        out += data


def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                  headers: Iterable[tuple[str, bytes | None]], out: bytearray) -> None:
    """Append one record (varint length first) to `out`."""
    body = bytearray(b"\x00")  # attributes, unused
    write_varlong(timestamp_delta, body)
    write_varint(offset_delta, body)
    _write_bytes(body, key)
    _write_bytes(body, value)
    headers = list(headers)
    write_varint(len(headers), body)
    for hkey, hvalue in headers:
        _write_bytes(body, hkey.encode("utf-8"))
        _write_bytes(body, hvalue)
    write_varint(len(body), out)
    out += body


def encode_batch(records: Sequence[Record], base_offset: int = 0, *,
                 compression: int = Compression.NONE,
                 producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH,
                 base_sequence: int = NO_SEQUENCE, timestamp_type: int = TimestampType.CREATE_TIME,
                 is_transactional: bool = False, is_control: bool = False,
                 partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
                 max_timestamp: int | None = None, last_offset_delta: int | None = None,
                 delete_horizon_ms: int | None = None) -> bytes:
    """Build one v2 batch from records whose offsets are `base_offset` + their offset delta.

    baseTimestamp is the first record's timestamp and maxTimestamp the largest (as the Java
    client and kafka-python write them), unless `max_timestamp` is given (LogAppendTime).
    Compression is applied as asked even when it does not shrink the records. An empty
    `records` gives a batch with recordsCount 0 (which `validate_batches` refuses).
    The log cleaner passes `last_offset_delta` to keep a batch's original last offset (and so
    its producer's last sequence) after records were removed, and `delete_horizon_ms`
    (KIP-534), which sets attribute bit 6 and becomes the baseTimestamp.
    """
    base_ts = records[0].timestamp if records else NO_TIMESTAMP
    if delete_horizon_ms is not None:
        base_ts = delete_horizon_ms
    body = bytearray()
    last_delta = -1
    for r in records:
        delta = r.offset - base_offset
        if delta <= last_delta:
            raise ValueError(f"record offsets must increase from base_offset {base_offset}: {r.offset}")
        last_delta = delta
        encode_record(delta, r.timestamp - base_ts, r.key, r.value, r.headers, body)
    if max_timestamp is None:
        max_timestamp = max((r.timestamp for r in records), default=NO_TIMESTAMP)
    codec = int(compression)
    payload = compress(codec, bytes(body)) if codec != Compression.NONE else body
    attributes = codec
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    if is_control:
        attributes |= CONTROL_FLAG_MASK
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_FLAG_MASK
    if last_offset_delta is None:
        last_offset_delta = max(last_delta, 0) if records else -1
    elif last_offset_delta < last_delta:
        raise ValueError(f"last_offset_delta {last_offset_delta} is below the last record's delta {last_delta}")
    out = bytearray(RECORD_BATCH_OVERHEAD)
    out += payload
    HEADER_STRUCT.pack_into(out, 0, base_offset, len(out) - LOG_OVERHEAD, partition_leader_epoch, MAGIC_V2, 0,
                      attributes, last_offset_delta, base_ts, max_timestamp,
                      producer_id, producer_epoch, base_sequence, len(records))
    _UINT32.pack_into(out, CRC_OFFSET, compute_crc(out, 0, len(out)))
    return bytes(out)


def iter_batches(buf: bytes | bytearray | memoryview) -> Iterable[BatchHeader]:
    """Headers of consecutive batches in `buf`, stopping at the first incomplete one (no checks)."""
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    pos, end = 0, len(mv)
    while end - pos >= RECORD_BATCH_OVERHEAD:
        h = BatchHeader(*HEADER_STRUCT.unpack_from(mv, pos), pos)
        if h.batch_length < MIN_BATCH_LENGTH or pos + h.size > end:
            return
        yield h
        pos += h.size


def next_offset_after(buf: bytes | bytearray | memoryview, default: int) -> int:
    """The offset after the last whole batch in `buf`; `default` when it holds none."""
    last = None
    for last in iter_batches(buf):
        pass
    return last.next_offset if last is not None else default
