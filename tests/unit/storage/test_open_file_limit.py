"""A log with 2,000 segments is opened, read end to end and appended to by a process whose
open-file limit is 256: old segments' files go through the bounded cache, so it never runs
out of descriptors (every segment holding its `.log` open would need 2,000)."""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

from rafka.partition_worker.record_batch import Record, encode_batch, parse_header
from rafka.partition_worker.segment import LogSegment

SEGMENTS = 2000
BATCHES_PER_SEGMENT = 2
RECORDS_PER_BATCH = 3
OPEN_FILE_LIMIT = 256

# Runs in the child: open, read everything in order and at random, append across rolls, reopen.
CHILD = textwrap.dedent("""
    import json, os, random, resource, sys
    from pathlib import Path
    from rafka.common.config import LogConfig
    from rafka.partition_worker.file_cache import shared_cache
    from rafka.partition_worker.log import PartitionLog
    from rafka.partition_worker.record_batch import Record, decode_records, encode_batch
    from tests.unit.storage.test_index_preallocation import read_offsets

    directory, segment_bytes = Path(sys.argv[1]), int(sys.argv[2])
    config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=100)

    log = PartitionLog.open(directory, config)  # unclean: no marker, the last segment is recovered
    end = log.log_end_offset
    in_order = read_offsets(log, 1500) == list(range(end))
    rng = random.Random(7)
    def holds(offset):
        data = log.read_bytes(log.read(offset, 1).regions[0])
        return offset in [r.offset for r in decode_records(data, 0)[1]]

    random_ok = all(holds(rng.randrange(end)) for _ in range(500))
    for i in range(60):  # a few rolls
        e = log.log_end_offset
        log.append(bytearray(encode_batch([Record(j, 10_000 + e + j, b"k", b"v" * 60) for j in range(3)])),
                   leader_epoch=1, max_batch_bytes=1 << 20)
    new_end, segments = log.log_end_offset, len(log.segments)
    log.close()
    log = PartitionLog.open(directory, config)
    after_reopen = read_offsets(log, 64 * 1024) == list(range(new_end)) and len(log.segments) == segments
    print(json.dumps({
        "limit": resource.getrlimit(resource.RLIMIT_NOFILE)[0], "capacity": shared_cache().capacity,
        "cached": len(shared_cache()), "evictions": shared_cache().evictions, "end": end, "new_end": new_end,
        "segments": segments, "in_order": in_order, "random_ok": random_ok, "after_reopen": after_reopen,
        "open_fds": len(os.listdir("/proc/self/fd")),
    }))
""")


def _write_segments(directory) -> int:
    """What PartitionLog writes with a tiny segment.bytes (without its fsyncs, to be quick)."""
    directory.mkdir()
    offset = 0
    for _ in range(SEGMENTS):
        seg = LogSegment.create(directory, offset, index_interval_bytes=100)
        for _ in range(BATCHES_PER_SEGMENT):
            data = bytearray(encode_batch(
                [Record(offset + i, 1_000 + offset + i, b"k", b"v" * 60) for i in range(RECORDS_PER_BATCH)],
                base_offset=offset))
            seg.append(data, [parse_header(data, 0)])
            offset += RECORDS_PER_BATCH
        seg.seal()
        size = seg.size
        seg.close()
    return size


def _limit_open_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILE_LIMIT, OPEN_FILE_LIMIT))


def test_two_thousand_segments_under_an_open_file_limit_of_256(tmp_path):
    directory = tmp_path / "many-0"
    segment_size = _write_segments(directory)
    assert len(list(directory.glob("*.log"))) == SEGMENTS
    proc = subprocess.run([sys.executable, "-c", CHILD, str(directory), str(segment_size)],
                          capture_output=True, text=True, timeout=120, preexec_fn=_limit_open_files,
                          cwd=Path(__file__).parents[3])  # the child imports a helper from tests/
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["limit"] == OPEN_FILE_LIMIT and result["capacity"] == OPEN_FILE_LIMIT // 4
    assert result["end"] == SEGMENTS * BATCHES_PER_SEGMENT * RECORDS_PER_BATCH
    assert result["in_order"] and result["random_ok"] and result["after_reopen"]
    assert result["new_end"] == result["end"] + 180 and result["segments"] > SEGMENTS + 10
    assert result["evictions"] > SEGMENTS  # files were closed and reopened all along
    assert result["cached"] <= result["capacity"] and result["open_fds"] < OPEN_FILE_LIMIT
