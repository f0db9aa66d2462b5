#!/usr/bin/env python
"""The storage engine alone (no broker, no network), beside what the machine can do:

  1. append MB/s of 1 KiB records in 16 KiB and in 1 MiB batches: PartitionLog.append of
     pre-built batches (record_batch.encode_batch), one batch per call as a produce request,
     with the final flush (fsync) counted; beside dd's sequential write rate on the same disk
     (`dd bs=1M conv=fdatasync` to a file in the same directory); target >= 0.6x with 1 MiB;
  2. sequential read MB/s: PartitionLog.read file regions sent with os.sendfile to a Unix
     socketpair a thread drains; beside plain reads (readinto) of the same warm files;
     target >= 0.5x;
  3. recovery scan MB/s: LogSegment.recover (what PartitionLog.open runs after an unclean
     stop) over each log written in step 1, from the page cache; beside crc32c.crc32c over
     the same bytes in memory (recovery must checksum every byte, so that is its ceiling).

Each rate is the best of --repeat runs (other work on the machine only ever lowers a rate).
Progress goes to stderr, the table to stdout (--output json: one JSON document). Exit 0 when
every phase ran, 1 otherwise.
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import crc32c
from harness.machine import disk_write_rate
from harness.phases import run_phase
from harness.report import add_output_options, finish
from harness.results_file import Recording
from harness.stats import MB, MIB
from harness.table import Row

from rafka.common.config import LogConfig
from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.record_batch import Record, encode_batch
from rafka.partition_worker.segment import LogSegment

RECORD_SIZE = 1024
BATCH_SIZES = (16 * 1024, 1024 * 1024)
FETCH_BYTES = 1024 * 1024  # max.partition.fetch.bytes default: one fetch's worth of regions
APPEND_TARGET = 0.6
READ_TARGET = 0.5
SOCKET_BUFFER = 4 * 1024 * 1024
PHASE_TIMEOUT_S = 1800.0
HEADERS = ("metric", "rafka", "peer", "ratio", "target", "met?")


@dataclass
class Results:
    """The best rate of each measurement, MB/s by name, and the phases that failed (name -> error)."""

    mbps: dict[str, float] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)

    def measure(self, name: str, fn) -> None:  # noqa: ANN001 - a callable giving MB/s
        """Run one phase; a failed one leaves its cells empty and the exit code 1."""
        rate = run_phase(self, name, fn, PHASE_TIMEOUT_S)
        if rate is not None:
            self.mbps[name] = rate


def batch_label(size: int) -> str:
    return f"{size // MIB} MiB" if size >= MIB else f"{size // 1024} KiB"


def build_batch(batch_bytes: int) -> bytearray:
    """One v2 batch of 1 KiB records (value 1024 bytes) about `batch_bytes` long."""
    count = max(1, batch_bytes // (RECORD_SIZE + 16))
    now = int(time.time() * 1000)
    value = os.urandom(RECORD_SIZE)
    return bytearray(encode_batch([Record(i, now + i, None, value) for i in range(count)]))


def append_run(directory: Path, batch_bytes: int, total_bytes: int) -> tuple[float, int]:
    """Append about `total_bytes` in batches of `batch_bytes` to a fresh log, then flush.

    Returns (seconds, bytes written). The same pre-built buffer is appended again and again:
    append rewrites its baseOffset in place, outside the CRC, exactly as for a produce request.
    """
    shutil.rmtree(directory, ignore_errors=True)
    data = build_batch(batch_bytes)
    appends = max(1, total_bytes // len(data))
    plog = PartitionLog.open(directory, LogConfig())
    try:
        started = time.perf_counter()
        for _ in range(appends):
            plog.append(data, leader_epoch=0, max_batch_bytes=len(data))
        plog.flush()
        elapsed = time.perf_counter() - started
        written = plog.size_bytes
    finally:
        plog.close()
    return elapsed, written


def sendfile_read_run(directory: Path) -> tuple[float, int]:
    """Read the whole log as a fetch loop would: regions of up to 1 MiB, each sent with sendfile."""
    plog = PartitionLog.open(directory, LogConfig())
    sender, receiver = socket.socketpair()
    for s in (sender, receiver):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER)
    received = [0]

    def drain() -> None:
        buf = bytearray(SOCKET_BUFFER)
        while n := receiver.recv_into(buf):
            received[0] += n

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    files: dict[str, int] = {}
    sent = 0
    try:
        started = time.perf_counter()
        offset, end = plog.log_start_offset, plog.log_end_offset
        out = sender.fileno()
        while offset < end:
            result = plog.read(offset, FETCH_BYTES)
            for region in result.regions:
                fd = files.get(region.path)
                if fd is None:
                    fd = files[region.path] = os.open(region.path, os.O_RDONLY)
                position, left = region.position, region.length
                while left:
                    n = os.sendfile(out, fd, position, left)
                    position += n
                    left -= n
                sent += region.length
            offset = result.next_offset
        sender.shutdown(socket.SHUT_WR)
        reader.join()
        elapsed = time.perf_counter() - started
    finally:
        sender.close()
        receiver.close()
        for fd in files.values():
            os.close(fd)
        plog.close()
    if received[0] != sent:
        raise RuntimeError(f"sent {sent} bytes but the reader got {received[0]}")
    return elapsed, sent


def plain_read_run(directory: Path) -> tuple[float, int]:
    """Read every `.log` of the directory with readinto, 1 MiB at a time (page cache)."""
    buf = bytearray(FETCH_BYTES)
    total = 0
    started = time.perf_counter()
    for path in sorted(directory.glob("*.log")):
        with open(path, "rb", buffering=0) as f:
            while n := f.readinto(buf):
                total += n
    return time.perf_counter() - started, total


def recovery_run(directory: Path) -> tuple[float, int]:
    """LogSegment.recover over every segment of the log (they are valid: nothing is cut)."""
    config = LogConfig()
    bases = sorted(int(p.name[:-4]) for p in directory.glob("*.log"))
    total, elapsed = 0, 0.0
    for base in bases:
        seg = LogSegment.open(directory, base, index_interval_bytes=config.index_interval_bytes)
        try:
            started = time.perf_counter()
            cut = seg.recover()
            elapsed += time.perf_counter() - started
            if cut:
                raise RuntimeError(f"recovery cut {cut} bytes of a valid segment")
            total += seg.size
        finally:
            seg.close()
    return elapsed, total


def crc_run(directory: Path, limit_bytes: int) -> tuple[float, int]:
    """crc32c over the log's bytes (up to `limit_bytes`) already in memory."""
    data = b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))[:limit_bytes]
    started = time.perf_counter()
    crc32c.crc32c(data)
    return time.perf_counter() - started, len(data)


def best_mbps(runs: list[tuple[float, int]]) -> float:
    return max(size / seconds for seconds, size in runs) / MB


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  .venv/bin/python bench/log_engine.py --append-mib 1024 --repeat 5")
    parser.add_argument("--append-mib", type=int, default=512,
                        help="MiB appended per run and per batch size; also what is read and recovered (default 512)")
    parser.add_argument("--dd-mib", type=int, default=512, help="MiB dd writes (default 512)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement, best taken (default 3)")
    add_output_options(parser, data_dir="the logs and dd's file")
    args = parser.parse_args(argv)
    recording = Recording.start(__file__, __doc__, argv)
    if min(args.append_mib, args.dd_mib, args.repeat) < 1:
        parser.error("--append-mib, --dd-mib and --repeat must be at least 1")

    root = Path(tempfile.mkdtemp(prefix="rafka-log-bench-", dir=args.data_dir))
    results = Results()
    phase = results.measure
    rates = results.mbps
    try:
        total = args.append_mib * MIB
        logs = {size: root / f"bench-{size}" for size in BATCH_SIZES}
        phase("dd", lambda: max(disk_write_rate(root, args.dd_mib, ("conv=fdatasync",)).mbps
                                for _ in range(args.repeat)))
        for size in BATCH_SIZES:
            phase(f"append {size}", lambda size=size: best_mbps(
                [append_run(logs[size], size, total) for _ in range(args.repeat)]))
        big = logs[BATCH_SIZES[-1]]
        plain_read_run(big)  # warm the page cache for both readers
        phase("sendfile", lambda: best_mbps([sendfile_read_run(big) for _ in range(args.repeat)]))
        phase("plain read", lambda: best_mbps([plain_read_run(big) for _ in range(args.repeat)]))
        for size in BATCH_SIZES:
            phase(f"recover {size}", lambda size=size: best_mbps(
                [recovery_run(logs[size]) for _ in range(args.repeat)]))
        phase("crc", lambda: best_mbps([crc_run(big, total) for _ in range(args.repeat)]))
    finally:
        shutil.rmtree(root, ignore_errors=True)

    rows = [Row(f"append 1 KiB records, {batch_label(size)} batches MB/s vs dd conv=fdatasync",
                rates.get(f"append {size}"), rates.get("dd"), "MB/s",
                (">=", APPEND_TARGET) if size == BATCH_SIZES[-1] else None) for size in BATCH_SIZES]
    rows.append(Row("sequential read, regions + sendfile MB/s vs plain read (page cache)",
                    rates.get("sendfile"), rates.get("plain read"), "MB/s", (">=", READ_TARGET)))
    rows += [Row(f"recovery scan, {batch_label(size)} batches MB/s vs CRC-32C in memory",
                 rates.get(f"recover {size}"), rates.get("crc"), "MB/s") for size in BATCH_SIZES]
    settings = {"append_mib": args.append_mib, "dd_mib": args.dd_mib, "repeat": args.repeat,
                "load_average_1m": os.getloadavg()[0]}
    finish(recording, args, rows, {"settings": settings, "mbps": rates, "failures": results.failures,
                                   "table": [row.to_json() for row in rows]}, results.failures,
           f"{args.append_mib} MiB per run, best of {args.repeat}; 1-min load average {settings['load_average_1m']:.1f}"
           f" on {os.cpu_count()} cores (other work on the machine lowers rates)", HEADERS)
    return 1 if results.failures else 0


if __name__ == "__main__":
    sys.exit(main())
