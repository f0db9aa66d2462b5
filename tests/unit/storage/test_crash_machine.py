"""Machine crashes: the page cache is lost, so only fsynced bytes are sure to survive.

`PartitionLog.flushed_bytes()` says how much of each file (`.log`, `.index`, `.timeindex`) was
fsynced. A simulated crash cuts each file with unflushed writes to that length, or keeps a
random part of the unflushed rest (the disk may have written some of it), and appends garbage
(zeros or random blocks). The next open gets the last recovery point, as the lead's checkpoint would hold it
(sometimes an older one, which must be just as safe). After each crash: every flushed batch is
there byte for byte, the log is whole batches only, at most `flush.messages` records or
`flush.ms` (+ one scheduler interval) of appends are lost, and appends continue at the end.
"""
from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from rafka.common.config import LogConfig
from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.producer_state import list_snapshots
from rafka.partition_worker.record_batch import Record, encode_batch
from tests.unit.storage.log_checks import crash, whole_batches

MAX = 1 << 20


def random_batch(rng: random.Random, tag: int) -> bytearray:
    n = rng.randint(1, 6)
    return bytearray(encode_batch([Record(i, 1_000 + tag, b"%d-%d" % (tag, i), rng.randbytes(rng.choice((1, 50, 400))))
                                   for i in range(n)]))


def lose_page_cache(log: PartitionLog, rng: random.Random) -> None:
    """Stop `log` as a power cut would: each file with unflushed writes keeps its fsynced prefix
    and maybe some of the rest, then gets garbage (zeros or random blocks, or none)."""
    flushed = log.flushed_bytes()
    crash(log)
    for path, keep in flushed.items():
        size = os.path.getsize(path)
        assert keep <= size, path
        if keep == size:
            continue  # fully fsynced and not written since: a power cut leaves it alone
        cut = keep if rng.random() < 0.5 else rng.randint(keep, size)
        garbage = rng.choice([b"", b"\x00" * rng.randint(1, 4096), rng.randbytes(rng.randint(1, 4096))])
        with open(path, "r+b") as f:
            f.truncate(cut)
            f.seek(cut)
            f.write(garbage)


def on_disk(directory: Path) -> bytes:
    """Every `.log` file's bytes, in offset order (a recovered log is whole batches only)."""
    return b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))


def check_recovered(log: PartitionLog, appended: list[bytes], durable_end: int) -> list[bytes]:
    """The log is a prefix of what was appended, reaching at least `durable_end`; returns it."""
    batches = whole_batches(log)
    kept = appended[:len(batches)]
    assert on_disk(log.directory) == b"".join(kept)  # byte for byte, nothing else
    assert log.log_end_offset >= durable_end
    assert all(offset <= log.log_end_offset for offset, _ in list_snapshots(log.directory))
    return kept


@pytest.mark.parametrize("flush_messages", [1, 10, 100])
def test_power_cut_loses_fewer_than_flush_messages_records(tmp_path, flush_messages):
    rng = random.Random(flush_messages)
    config = LogConfig(segment_bytes=4096, index_interval_bytes=200, flush_messages=flush_messages)
    path = tmp_path / "t-0"
    appended: list[bytes] = []  # every batch, as written (offsets assigned)
    checkpoint: int | None = None
    durable_end = 0
    for round_no in range(8):
        log = PartitionLog.open(path, config, recovery_point=checkpoint)
        appended = check_recovered(log, appended, durable_end)
        for _ in range(rng.randint(1, 60)):
            b = random_batch(rng, round_no)
            info = log.append(b, leader_epoch=round_no, max_batch_bytes=MAX)
            assert info.base_offset == (_next_offset(appended[-1]) if appended else 0)
            appended.append(bytes(b))
        end, durable_end = log.log_end_offset, log.recovery_point
        assert end - durable_end < flush_messages
        checkpoint = rng.choice([durable_end, durable_end, rng.randint(0, durable_end), None])
        lose_page_cache(log, rng)
    log = PartitionLog.open(path, config, recovery_point=checkpoint)
    kept = check_recovered(log, appended, durable_end)
    info = log.append(random_batch(rng, 99), leader_epoch=99, max_batch_bytes=MAX)
    assert info.base_offset == (_next_offset(kept[-1]) if kept else 0) == log.log_end_offset - info.record_count
    log.close()


@pytest.mark.parametrize("flush_ms,interval_ms", [(0, 10), (100, 10), (250, 100), (1_000, 1)])
def test_power_cut_loses_at_most_flush_ms_of_appends(tmp_path, flush_ms, interval_ms):
    """The scheduler checks every `interval_ms` (injected clock): every batch appended at least
    flush.ms + one interval before the crash is durable."""
    rng = random.Random(flush_ms * 7 + interval_ms)
    config = LogConfig(segment_bytes=8192, index_interval_bytes=200, flush_ms=flush_ms,
                       flush_scheduler_interval_ms=interval_ms)
    path = tmp_path / "t-0"
    appended: list[bytes] = []
    times: list[int] = []  # append time of each batch
    checkpoint: int | None = None
    durable_end = 0
    now = 0
    for round_no in range(6):
        log = PartitionLog.open(path, config, recovery_point=checkpoint, now_ms=now)
        appended = check_recovered(log, appended, durable_end)
        times = [now] * len(appended)  # recovered data is unflushed again: its flush.ms clock starts at the open
        next_tick = now + interval_ms
        for _ in range(rng.randint(1, 80)):
            now += rng.randint(0, 40)
            while next_tick <= now:  # the scheduler's checks due before this append
                log.maybe_flush(next_tick)
                next_tick += interval_ms
            b = random_batch(rng, round_no)
            log.append(b, leader_epoch=round_no, max_batch_bytes=MAX)
            appended.append(bytes(b))
            times.append(now)
        ends = _ends(appended)
        must_survive = [e for e, t in zip(ends, times) if t + flush_ms + interval_ms <= now]
        durable_end = log.recovery_point
        assert not must_survive or must_survive[-1] <= durable_end
        checkpoint = rng.choice([durable_end, rng.randint(0, durable_end)])
        lose_page_cache(log, rng)
        now += rng.randint(0, 2 * flush_ms + 1)
    log = PartitionLog.open(path, config, recovery_point=checkpoint, now_ms=now)
    check_recovered(log, appended, durable_end)
    log.close()


def _next_offset(raw: bytes) -> int:
    from rafka.partition_worker.record_batch import parse_header

    return parse_header(raw, 0).next_offset


def _ends(batches: list[bytes]) -> list[int]:
    return [_next_offset(b) for b in batches]
