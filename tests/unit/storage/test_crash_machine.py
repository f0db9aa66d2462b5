"""Machine crashes, judged by an oracle that does not ask the log what it flushed.

`SyncOracle` wraps `os.fsync` and `os.fdatasync`: at every sync of a regular file it records
the file's whole content at that moment, by inode (renames keep it). That is what a power cut
keeps of the file: the page cache, everything written since, is lost (rafka maps no files,
so no `msync` is needed). A simulated crash then reverts every file of the partition to its
last synced content, or empties it if it was never synced ("revert"); or, in the "torn" model,
keeps a random part of what was written after that sync and appends garbage (zeros or random
blocks), as a disk that wrote some sectors of its cache would. Directory entries are taken as
they stand (creations and renames are journaled in order by ext4 and xfs); file contents are
what the oracle says.

Then, per crash: the log's own claim (`recovery_point`) never exceeds what the oracle saw
synced; every synced batch is recovered byte for byte; the "revert" model recovers exactly the
synced batches and nothing else; the "torn" one whole batches only, a prefix of what was
appended; the synced batches cover every record but fewer than `flush.messages`, and every
batch appended `flush.ms` plus one scheduler interval before the crash; the recovery point
passed to the next open is the log's (or an older one, or none, which must be as safe).
"""
from __future__ import annotations

import os
import random
import stat
from pathlib import Path

import pytest

from rafka.common.config import LogConfig
from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.producer_state import list_snapshots
from rafka.partition_worker.record_batch import Record, encode_batch, parse_header
from tests.unit.storage.log_checks import crash, whole_batches

MAX = 1 << 20
MODELS = ["revert", "torn"]


class SyncOracle:
    """What each file held at its last fsync/fdatasync, by inode, recorded by wrapping the calls."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.synced: dict[int, bytes] = {}
        self.syncs = 0
        for name in ("fsync", "fdatasync"):
            monkeypatch.setattr(os, name, self._wrap(getattr(os, name)))

    def _wrap(self, real):
        def sync(fd: int) -> None:
            real(fd)
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode):   # a directory's sync makes names durable: taken as they stand
                with open(f"/proc/self/fd/{fd}", "rb") as f:   # whatever mode `fd` was opened in
                    self.synced[st.st_ino] = f.read()
                self.syncs += 1
        return sync

    def power_cut(self, log: PartitionLog, model: str, rng: random.Random) -> None:
        """Stop `log` without closing it and give each of its files what a power cut leaves."""
        crash(log)
        for path in sorted(p for p in log.directory.iterdir() if p.is_file()):
            now = path.read_bytes()
            kept = self.synced.get(path.stat().st_ino, b"")
            if model == "torn" and len(now) > len(kept):
                kept += now[len(kept):rng.randint(len(kept), len(now))]
                kept += rng.choice([b"", b"\x00" * rng.randint(1, 4096), rng.randbytes(rng.randint(1, 4096))])
            if kept != now:
                with open(path, "r+b") as f:
                    f.truncate(0)
                    f.write(kept)
            self.synced[path.stat().st_ino] = kept   # what is on the disk now is durable

    def synced_log_bytes(self, directory: Path) -> bytes:
        """The synced content of the partition's `.log` files, in offset order."""
        return b"".join(self.synced.get(p.stat().st_ino, b"") for p in sorted(directory.glob("*.log")))


def random_batch(rng: random.Random, tag: int) -> bytearray:
    n = rng.randint(1, 6)
    return bytearray(encode_batch([Record(i, 1_000 + tag, b"%d-%d" % (tag, i), rng.randbytes(rng.choice((1, 50, 400))))
                                   for i in range(n)]))


def on_disk(directory: Path) -> bytes:
    """Every `.log` file's bytes, in offset order (a recovered log is whole batches only)."""
    return b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))


def durable_batches(oracle: SyncOracle, log: PartitionLog, appended: list[bytes], model: str) -> int:
    """How many of `appended` the oracle saw synced, before the crash; checks that the log
    claims no more than that as its recovery point. In the revert model the synced bytes are
    exactly those batches (a flush writes whole batches); a torn crash may leave garbage that
    recovery cut without syncing the cut, which the next crash may bring back."""
    synced = oracle.synced_log_bytes(log.directory)
    count, end = 0, 0
    while count < len(appended) and synced[end:end + len(appended[count])] == appended[count]:
        end += len(appended[count])
        count += 1
    if model == "revert":
        assert synced == b"".join(appended[:count]), "the synced bytes are not the acknowledged batches"
    durable_end = _next_offset(appended[count - 1]) if count else 0
    assert log.recovery_point <= durable_end, f"the log claims {log.recovery_point} durable, the disk {durable_end}"
    return count


def check_recovered(log: PartitionLog, appended: list[bytes], durable: int, model: str) -> list[bytes]:
    """After the crash: every synced batch is there, whole batches of `appended` only, and in
    the revert model nothing else; returns what was kept."""
    batches = whole_batches(log)
    kept = appended[:len(batches)]
    assert on_disk(log.directory) == b"".join(kept)   # byte for byte: a prefix, no garbage
    assert len(kept) >= durable, f"lost synced batches: kept {len(kept)} of {durable}"
    if model == "revert":
        assert len(kept) == durable, f"recovered {len(kept) - durable} batches that were never synced"
    assert log.log_end_offset == (_next_offset(kept[-1]) if kept else 0)
    assert all(offset <= log.log_end_offset for offset, _ in list_snapshots(log.directory))
    return kept


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("flush_messages", [1, 10, 100])
def test_power_cut_loses_fewer_than_flush_messages_records(tmp_path, monkeypatch, flush_messages, model):
    oracle = SyncOracle(monkeypatch)
    rng = random.Random(flush_messages * 31 + len(model))
    config = LogConfig(segment_bytes=4096, index_interval_bytes=200, flush_messages=flush_messages)
    path = tmp_path / "t-0"
    appended: list[bytes] = []  # every batch, as written (offsets assigned)
    checkpoint: int | None = None
    durable = 0
    for round_no in range(8):
        log = PartitionLog.open(path, config, recovery_point=checkpoint)
        appended = check_recovered(log, appended, durable, model)
        for _ in range(rng.randint(1, 60)):
            b = random_batch(rng, round_no)
            info = log.append(b, leader_epoch=round_no, max_batch_bytes=MAX)
            assert info.base_offset == (_next_offset(appended[-1]) if appended else 0)
            appended.append(bytes(b))
        durable = durable_batches(oracle, log, appended, model)
        durable_end = _next_offset(appended[durable - 1]) if durable else 0
        assert log.log_end_offset - durable_end < flush_messages
        checkpoint = rng.choice([log.recovery_point, log.recovery_point, rng.randint(0, log.recovery_point), None])
        oracle.power_cut(log, model, rng)
    log = PartitionLog.open(path, config, recovery_point=checkpoint)
    kept = check_recovered(log, appended, durable, model)
    info = log.append(random_batch(rng, 99), leader_epoch=99, max_batch_bytes=MAX)
    assert info.base_offset == (_next_offset(kept[-1]) if kept else 0) == log.log_end_offset - info.record_count
    log.close()
    assert oracle.syncs > 0


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("flush_ms,interval_ms", [(0, 10), (100, 10), (250, 100), (1_000, 1)])
def test_power_cut_loses_at_most_flush_ms_of_appends(tmp_path, monkeypatch, flush_ms, interval_ms, model):
    """The scheduler checks every `interval_ms` (injected clock): every batch appended at least
    flush.ms + one interval before the crash was synced."""
    oracle = SyncOracle(monkeypatch)
    rng = random.Random(flush_ms * 7 + interval_ms + len(model))
    config = LogConfig(segment_bytes=8192, index_interval_bytes=200, flush_ms=flush_ms,
                       flush_scheduler_interval_ms=interval_ms)
    path = tmp_path / "t-0"
    appended: list[bytes] = []
    times: list[int] = []  # append time of each batch
    checkpoint: int | None = None
    durable = 0
    now = 0
    for round_no in range(6):
        log = PartitionLog.open(path, config, recovery_point=checkpoint, now_ms=now)
        appended = check_recovered(log, appended, durable, model)
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
        durable = durable_batches(oracle, log, appended, model)
        must_survive = sum(1 for t in times if t + flush_ms + interval_ms <= now)
        assert durable >= must_survive, f"{must_survive - durable} batches older than flush.ms were not synced"
        checkpoint = rng.choice([log.recovery_point, rng.randint(0, log.recovery_point)])
        oracle.power_cut(log, model, rng)
        now += rng.randint(0, 2 * flush_ms + 1)
    log = PartitionLog.open(path, config, recovery_point=checkpoint, now_ms=now)
    check_recovered(log, appended, durable, model)
    log.close()


def test_the_oracle_catches_a_log_that_claims_more_than_it_synced(tmp_path, monkeypatch):
    """The check can fail: a flush that skips the fsync of the log file leaves the recovery
    point above what the disk holds, and a power cut then loses acknowledged-as-flushed data."""
    oracle = SyncOracle(monkeypatch)
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(segment_bytes=1 << 20, flush_messages=1))
    monkeypatch.setattr(type(log.segments[-1]), "flush", lambda seg: setattr(seg, "flushed_size", seg.size))
    appended = []
    for i in range(3):
        b = random_batch(random.Random(i), i)
        log.append(b, leader_epoch=0, max_batch_bytes=MAX)
        appended.append(bytes(b))
    with pytest.raises(AssertionError, match="the log claims"):
        durable_batches(oracle, log, appended, "revert")
    crash(log)


def _next_offset(raw: bytes) -> int:
    return parse_header(raw, 0).next_offset
