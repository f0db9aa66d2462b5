"""Checks shared by the crash tests: what a recovered log must look like."""
from __future__ import annotations

from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.record_batch import BatchHeader, Record, decode_records, iter_batches


def whole_batches(log: PartitionLog) -> list[tuple[BatchHeader, list[Record]]]:
    """Every batch of the log, read from its segment files, oldest first.

    Asserts that each `.log` file is nothing but whole batches with good CRCs (decode_records
    checks them), that offsets run without a gap from the first segment's base to the log
    end, and that reading through the indexes (`PartitionLog.read`) finds the same batches.
    """
    out: list[tuple[BatchHeader, list[Record]]] = []
    expected = log.log_start_offset
    for seg in log.segments:
        data = seg.log_path.read_bytes()
        assert len(data) == seg.size, seg
        assert seg.base_offset == expected, (seg, expected)
        pos = 0
        while pos < len(data):
            h, records = decode_records(data, pos)
            assert h.base_offset == expected and [r.offset for r in records] == list(range(h.base_offset,
                                                                                           h.next_offset))
            out.append((h, records))
            expected = h.next_offset
            pos += h.size
        assert seg.next_offset == expected, seg
    assert expected == log.log_end_offset
    assert read_bases(log) == [h.base_offset for h, _ in out]
    return out


def read_bases(log: PartitionLog, start: int | None = None) -> list[int]:
    """Base offsets of the batches `PartitionLog.read` returns from `start` to the log end."""
    offset = log.log_start_offset if start is None else start
    bases: list[int] = []
    while offset < log.log_end_offset:
        result = log.read(offset, 1 << 16)
        assert result.regions, offset
        for region in result.regions:
            bases.extend(h.base_offset for h in iter_batches(log.read_bytes(region)))
        offset = result.next_offset
    return bases


def crash(log: PartitionLog) -> None:
    """Stop without `close()`: the files are closed but no clean-shutdown marker is written."""
    for seg in log.segments:
        seg.close()
