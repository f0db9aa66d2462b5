"""Process crashes: a real child process appends to a PartitionLog and is killed with SIGKILL.

A kill keeps the page cache, so every append that returned must survive, whole, and at most
the one append in flight may add a whole batch or leave a torn tail that recovery cuts off.
The child (crash_child.py) reports each append after it returned; the test waits on those
reports (never a fixed sleep) and kills at a random report count plus a random short delay.
"""
from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rafka.common.config import LogConfig
from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.record_batch import BatchHeader, Record
from tests.unit.storage.crash_child import batch_size, expected_value, make_batch, parse_value
from tests.unit.storage.log_checks import crash, whole_batches

CHILD = Path(__file__).with_name("crash_child.py")
REPO = Path(__file__).resolve().parents[3]
SEGMENT_BYTES = 16_384


def config(flush_messages: int) -> LogConfig:
    return LogConfig(segment_bytes=SEGMENT_BYTES, index_interval_bytes=256, flush_messages=flush_messages)


class Child:
    """One run of crash_child.py and the reports it wrote before it died."""

    def __init__(self, directory: Path, round_no: int, seed: int, flush_messages: int,
                 recovery_point: int | None) -> None:
        args = [str(directory), str(round_no), str(seed), str(flush_messages), str(SEGMENT_BYTES),
                "-" if recovery_point is None else str(recovery_point)]
        self.proc = subprocess.Popen([sys.executable, str(CHILD), *args], cwd=REPO,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.opened: tuple[int, int] | None = None  # (log end, recovery point) after the child's open
        self.reports: list[tuple[int, int, int, int]] = []  # (batch index, base, last, recovery point)
        self._buffer = b""

    def _take_lines(self, data: bytes) -> None:
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            fields = line.split()
            if fields[0] == b"open":
                self.opened = (int(fields[1]), int(fields[2]))
            else:
                self.reports.append(tuple(int(f) for f in fields))

    def wait_for_reports(self, n: int, timeout_s: float = 60) -> None:
        """Read reports until there are `n` (fails if the child dies or the deadline passes)."""
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while len(self.reports) < n:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"only {len(self.reports)} of {n} appends reported"
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                data = os.read(fd, 1 << 16)
                assert data, f"child died: {self.proc.stderr.read().decode()[-3000:]}"
                self._take_lines(data)

    def kill(self) -> None:
        """SIGKILL, then read what it reported before dying (each report is one whole write)."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        assert self.proc.returncode == -signal.SIGKILL
        self._take_lines(self.proc.stdout.read())
        self.proc.stdout.close()
        self.proc.stderr.close()


def check_records(batches: list[tuple[BatchHeader, list[Record]]], seed: int) -> dict[int, list[BatchHeader]]:
    """Every record is the one the child wrote (by its round and batch index), batches of a round
    follow each other from batch 0 without a gap, rounds never interleave. Batches by round."""
    by_round: dict[int, list[BatchHeader]] = {}
    order: list[int] = []
    for h, records in batches:
        round_no, index, _ = parse_value(records[0].value)
        count, size = batch_size(round_no, index, seed)
        assert [r.value for r in records] == [expected_value(round_no, index, j, size) for j in range(count)]
        assert h.partition_leader_epoch == round_no
        got = by_round.setdefault(round_no, [])
        assert index == len(got), f"round {round_no}: batch {index} after {len(got)} batches"
        got.append(h)
        if not order or order[-1] != round_no:
            order.append(round_no)
    assert order == sorted(set(order)), order
    return by_round


@pytest.mark.parametrize("seed,flush_messages", [(1, 1), (2, 10), (3, 100), (4, 7)])
def test_kill_9_loses_no_returned_append(tmp_path, seed, flush_messages):
    rng = random.Random(seed)
    directory = tmp_path / "crash-0"
    checkpoint: int | None = None  # what the lead's recovery-point checkpoint would hold
    reports: dict[int, list[tuple[int, int, int, int]]] = {}
    log_end = 0
    for round_no in range(4):
        child = Child(directory, round_no, seed, flush_messages, checkpoint)
        try:
            child.wait_for_reports(rng.randint(1, 120))
            time.sleep(rng.random() * 0.02)  # a random moment between reports
        finally:
            child.kill()
        assert child.opened[0] == log_end  # the child appends where the last recovery ended
        reports[round_no] = child.reports
        flushed = max(r[3] for r in child.reports)
        assert flushed >= log_end - flush_messages  # flush.messages holds: at most M-1 unflushed
        checkpoint = flushed

        log = PartitionLog.open(directory, config(flush_messages), recovery_point=checkpoint)
        by_round = check_records(whole_batches(log), seed)
        for r, done in reports.items():
            got = by_round.get(r, [])
            # every append that returned is there with its offsets; the one in flight may be too
            assert len(done) <= len(got) <= len(done) + 1, (r, len(done), len(got))
            assert [(h.base_offset, h.last_offset) for h in got[:len(done)]] == [(b, l) for _, b, l, _ in done]
        assert log.log_end_offset >= flushed and log.recovery_point == checkpoint
        log_end = log.log_end_offset
        crash(log)  # leave it unclean: the next child recovers again

    log = PartitionLog.open(directory, config(flush_messages), recovery_point=checkpoint)
    info = log.append(make_batch(99, 0, seed), leader_epoch=99, max_batch_bytes=1 << 20)
    assert info.base_offset == log_end
    check_records(whole_batches(log), seed)
    log.close()


def _killed_log(tmp_path: Path, seed: int, appends: int) -> tuple[Path, int]:
    """A log left by a child killed after `appends` appends (flush.messages=1): (dir, checkpoint)."""
    directory = tmp_path / "crash-0"
    child = Child(directory, 0, seed, 1, None)
    try:
        child.wait_for_reports(appends)
    finally:
        child.kill()
    return directory, max(r[3] for r in child.reports)


def _garbage(rng: random.Random) -> bytes:
    return rng.choice([b"\x00" * rng.randint(1, 300), rng.randbytes(rng.randint(1, 300))])


@pytest.mark.parametrize("damage", ["cut_active_mid_batch", "garbage_on_active", "garbage_on_older_below_checkpoint",
                                    "garbage_on_older_without_checkpoint", "bad_crc_in_older_without_checkpoint"])
def test_damage_after_kill_recovers_to_whole_batches(tmp_path, damage):
    rng = random.Random(damage)
    directory, checkpoint = _killed_log(tmp_path, seed=11, appends=60)
    cfg = config(1)
    log = PartitionLog.open(directory, cfg, recovery_point=checkpoint)
    if log.segments[-1].size == 0:  # killed between a roll and its first write: give it a batch
        log.append(make_batch(1, 0, 11), leader_epoch=1, max_batch_bytes=1 << 20)
    before = whole_batches(log)
    segments = log.segments
    assert len(segments) >= 4
    active, older = segments[-1], segments[1]
    active_headers, older_headers = list(active.iter_headers()), list(older.iter_headers())
    crash(log)
    assert older.next_offset <= checkpoint
    recovery_point: int | None = checkpoint
    if damage == "cut_active_mid_batch":
        last = active_headers[-1]
        os.truncate(active.log_path, last.position + rng.randint(1, last.size - 1))
        expected_end = last.base_offset
    elif damage == "garbage_on_active":
        with open(active.log_path, "ab") as f:
            f.write(_garbage(rng))
        expected_end = active.next_offset
    elif damage == "garbage_on_older_below_checkpoint":
        # Not scanned (below the recovery point), but the index check finds the bytes after the
        # last whole batch: only they are cut, the later segments stay.
        with open(older.log_path, "ab") as f:
            f.write(rng.randbytes(100))
        expected_end = active.next_offset
    elif damage == "garbage_on_older_without_checkpoint":
        recovery_point = None  # everything is scanned: the log ends where the garbage starts
        with open(older.log_path, "ab") as f:
            f.write(_garbage(rng))
        expected_end = older.next_offset
    else:
        recovery_point = None
        victim = older_headers[1]
        with open(older.log_path, "r+b") as f:
            f.seek(victim.position + victim.size - 3)
            byte = f.read(1)
            f.seek(victim.position + victim.size - 3)
            f.write(bytes([byte[0] ^ 0x55]))
        expected_end = victim.base_offset

    log = PartitionLog.open(directory, cfg, recovery_point=recovery_point)
    after = whole_batches(log)
    assert log.log_end_offset == expected_end
    assert [(h, r) for h, r in before if h.next_offset <= expected_end] == after  # a prefix, byte for byte
    names = {p.name for p in directory.iterdir()}
    kept = segments[:segments.index(older) + 1] if recovery_point is None else segments
    assert {s.log_path.name for s in segments} & names == {s.log_path.name for s in kept}
    assert log.append(make_batch(5, 0, 11), leader_epoch=5, max_batch_bytes=1 << 20).base_offset == expected_end
    check_records(whole_batches(log), 11)
    log.close()
