"""The benchmark's latency floor, the instant log: produced batches are numbered on and read
back whole, and a real confluent-kafka producer and consumer run the latency probe through it."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import _kafka
from _instant_log import MemoryPartition, instant_log
from rafka.partition_worker.record_batch import Record, decode_records, encode_batch, iter_batches


def batch_of(count: int, size: int = 50) -> bytes:
    """A producer's batch (base offset 0) of `count` records."""
    return encode_batch([Record(i, 1_700_000_000_000, None, bytes([i % 256]) * size) for i in range(count)])


def test_appended_batches_are_numbered_on_from_the_end() -> None:
    partition = MemoryPartition()
    assert partition.append(batch_of(3)) == 0
    assert partition.append(batch_of(1) + batch_of(2)) == 3   # two batches in one append
    assert partition.end_offset == 6
    data = partition.read(0, 1 << 20)
    records = [r for h in iter_batches(data) for r in decode_records(data, h.position)[1]]   # CRCs hold
    assert [r.offset for r in records] == [0, 1, 2, 3, 4, 5]


def test_a_read_is_whole_batches_from_the_one_holding_the_offset() -> None:
    partition = MemoryPartition()
    for _ in range(4):
        partition.append(batch_of(10))
    one = len(batch_of(10))
    read = list(iter_batches(partition.read(15, 2 * one)))
    assert [b.base_offset for b in read] == [10, 20]      # from the batch holding 15, as many as fit
    assert len(partition.read(35, 1)) == one              # at least one batch, however small the limit
    assert partition.read(40, 1 << 20) == b""             # at the end: nothing


def test_the_latency_probe_reads_every_record_through_it() -> None:
    """end_to_end_latency creates its topic, waits on the consumer's parked fetches for each
    record, checks every record came once and in order, and deletes the topic."""
    with instant_log() as bootstrap:
        result = _kafka.end_to_end_latency("instant log", bootstrap, rate_per_s=500, seconds=0.5, timeout_s=30)
    assert result.records == 250
    assert 0 < result.p50_ms <= result.p99_ms <= result.max_ms
