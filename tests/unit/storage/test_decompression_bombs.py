"""Decompression bombs (issue 23): a batch whose records expand past the broker's limit is
refused with CORRUPT_MESSAGE before it is held in memory, for every codec and on the produce
paths that decompress (compacted topics, CreateTime bounds)."""
from __future__ import annotations

import gzip
import random
import struct
import time
import tracemalloc

import pytest

from rafka.common.config import LogConfig
from rafka.common.errors import CorruptRecordError, ErrorCode
from rafka.common.varint import write_varint
from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.record_batch import (
    ATTRIBUTES_OFFSET, CRC_OFFSET, MAX_DECOMPRESSED_BATCH_BYTES, RECORD_BATCH_OVERHEAD, Compression, Record,
    compute_crc, decode_records, encode_batch,
)

TS = 1_800_000_000_000
HOUR = 3_600_000
CODECS = [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]
LIMIT = 64 * 1024  # lowered per call, so each codec's bomb stays small in the test process


def records_section_size(records: list[Record]) -> int:
    """Bytes of the records section once decompressed: the uncompressed batch less its header."""
    return len(encode_batch(records)) - RECORD_BATCH_OVERHEAD


def with_records_section(codec: int, section: bytes, count: int = 1) -> bytes:
    """A batch of `count` records (codec `codec`) whose records section is `section`, as sent."""
    batch = bytearray(encode_batch([Record(i, TS, b"k", b"") for i in range(count)]))
    batch[RECORD_BATCH_OVERHEAD:] = section
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    struct.pack_into(">h", batch, ATTRIBUTES_OFFSET, codec)
    struct.pack_into(">I", batch, CRC_OFFSET, compute_crc(batch, 0, len(batch)))
    return bytes(batch)


def gzip_bomb(value_bytes: int, *, key: bytes = b"k") -> bytes:
    """A valid gzip batch of one record whose value is `value_bytes` zeros (a multiple of 1 MiB).

    Built without holding the value: the records section is many gzip members (RFC 1952;
    Java's GZIPInputStream and Python's gzip read them all), and the 1 MiB run of zeros is
    compressed once, its member repeated. About 1 KiB a MiB: a 1 GiB value is 1 MiB sent.
    """
    mib, rest = divmod(value_bytes, 1 << 20)
    assert rest == 0 and mib > 0
    prefix = bytearray(b"\x00")  # record attributes
    write_varint(0, prefix)  # timestamp delta
    write_varint(0, prefix)  # offset delta
    write_varint(len(key), prefix)
    prefix += key
    write_varint(value_bytes, prefix)
    record_length = len(prefix) + value_bytes + 1  # + header count
    head = bytearray()
    write_varint(record_length, head)
    head += prefix
    zeros = gzip.compress(bytes(1 << 20), mtime=0)
    section = gzip.compress(bytes(head), mtime=0) + zeros * mib + gzip.compress(b"\x00", mtime=0)
    return with_records_section(Compression.GZIP, section)


@pytest.mark.parametrize("codec", CODECS, ids=[c.name for c in CODECS])
def test_a_batch_expanding_past_the_limit_is_refused(codec):
    bomb = encode_batch([Record(0, TS, b"k", bytes(2 * LIMIT))], compression=codec)
    assert len(bomb) < LIMIT // 8  # zeros compress well: a bomb, not just a big batch
    with pytest.raises(CorruptRecordError, match=f"{codec.name} records expand past {LIMIT} bytes") as refused:
        decode_records(bomb, max_decompressed_bytes=LIMIT)
    assert refused.value.code is ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("codec", CODECS, ids=[c.name for c in CODECS])
def test_a_batch_exactly_at_the_limit_decodes(codec):
    records = [Record(0, TS, b"k", bytes(LIMIT // 2)), Record(1, TS + 1, b"k2", b"v" * 100, (("h", b"x"),))]
    size = records_section_size(records)
    batch = encode_batch(records, compression=codec)
    assert decode_records(batch, max_decompressed_bytes=size)[1] == records
    with pytest.raises(CorruptRecordError, match="expand past"):
        decode_records(batch, max_decompressed_bytes=size - 1)


@pytest.mark.parametrize("codec", CODECS, ids=[c.name for c in CODECS])
def test_a_batch_of_many_chunks_decodes_whole(codec):
    # Incompressible values: past the decompressors' 1 MiB chunk, and LZ4 on its streaming path.
    rng = random.Random(23)
    records = [Record(i, TS + i, b"k%d" % i, rng.randbytes(300_000)) for i in range(8)]
    assert decode_records(encode_batch(records, compression=codec))[1] == records


@pytest.mark.parametrize("codec", CODECS, ids=[c.name for c in CODECS])
@pytest.mark.parametrize("limit", [MAX_DECOMPRESSED_BATCH_BYTES, 200_000], ids=["default", "near"])
def test_compressed_records_cut_short_are_corrupt(codec, limit):
    rng = random.Random(5)
    records = [Record(i, TS, b"k", rng.randbytes(1000) * 10) for i in range(10)]
    section = encode_batch(records, compression=codec)[RECORD_BATCH_OVERHEAD:]
    with pytest.raises(CorruptRecordError):
        decode_records(with_records_section(codec, section[:-20], count=10), max_decompressed_bytes=limit)


def test_raw_snappy_whose_length_preamble_is_over_the_limit_is_refused_before_decompressing():
    # Raw snappy opens with the uncompressed length as an unsigned varint; a decompressor
    # allocates that much first. 2 GiB - 1 declared, followed by a few bytes of nothing.
    section = b"\xff\xff\xff\xff\x07" + b"\x00" * 16
    with pytest.raises(CorruptRecordError, match="SNAPPY records expand past 67108864 bytes"):
        decode_records(with_records_section(Compression.SNAPPY, section))


def test_the_limit_counts_across_gzip_members():
    bomb = gzip_bomb(2 << 20)
    with pytest.raises(CorruptRecordError, match="GZIP records expand past"):
        decode_records(bomb, max_decompressed_bytes=(1 << 20) + 100)
    assert len(decode_records(bomb, max_decompressed_bytes=(2 << 20) + 100)[1][0].value) == 2 << 20


def test_a_1_gib_gzip_bomb_is_refused_quickly_in_bounded_memory():
    bomb = gzip_bomb(1 << 30)
    assert len(bomb) < 2 << 20  # 1 GiB expanded, about 1 MiB sent
    tracemalloc.start()
    try:
        start = time.perf_counter()
        with pytest.raises(CorruptRecordError, match="GZIP records expand past 67108864 bytes"):
            decode_records(bomb)
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The decompressor stops one byte past the limit: the limit plus small change, never the GiB.
    assert peak < 2 * MAX_DECOMPRESSED_BATCH_BYTES, f"peak {peak / (1 << 20):.1f} MiB"
    assert elapsed < 2.5, f"{elapsed:.2f} s"


# -- through PartitionLog.append: the produce paths that decompress ---------------------------

COMPACTED = LogConfig(cleanup_policy=("compact",))
CREATE_TIME_BOUNDED = LogConfig(message_timestamp_before_max_ms=HOUR, message_timestamp_after_max_ms=HOUR)


@pytest.mark.parametrize("config", [COMPACTED, CREATE_TIME_BOUNDED], ids=["compacted", "create-time-bounds"])
def test_append_refuses_a_bomb_writes_nothing_and_takes_the_next_batch(tmp_path, config):
    log = PartitionLog.open(tmp_path / "t-0", config)
    bomb = gzip_bomb(MAX_DECOMPRESSED_BATCH_BYTES + (1 << 20))
    with pytest.raises(CorruptRecordError, match="expand past") as refused:
        log.append(bomb, leader_epoch=0, max_batch_bytes=1 << 20, now_ms=TS)
    assert refused.value.code is ErrorCode.CORRUPT_MESSAGE
    assert log.log_end_offset == 0 and log.segments[-1].size == 0
    normal = encode_batch([Record(0, TS, b"k", b"v" * 1000)], compression=Compression.GZIP)
    info = log.append(normal, leader_epoch=0, max_batch_bytes=1 << 20, now_ms=TS)
    assert info.base_offset == 0 and log.log_end_offset == 1
