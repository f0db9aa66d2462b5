"""Machine limits: loopback TCP throughput and sequential disk write rate."""
from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path

from _kafka import PhaseError
from _results import RateResult

GIB = 1024 ** 3
SOCKET_BUFFER = 4 * 1024 * 1024
SINK = Path(__file__).with_name("_loopback_sink.py")
DD_SUMMARY = re.compile(r"^(\d+) bytes .* copied, ([\d.,]+) s", re.MULTILINE)


def loopback_throughput(total: int = GIB, chunk: int = SOCKET_BUFFER) -> RateResult:
    """Send `total` bytes over 127.0.0.1 to a receiver process; time until it acknowledges."""
    sink = subprocess.Popen([sys.executable, str(SINK), str(total), str(chunk)],
                            stdout=subprocess.PIPE, text=True)
    try:
        port = int(sink.stdout.readline())
        data = memoryview(bytes(chunk))
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, chunk)
            s.connect(("127.0.0.1", port))
            started = time.perf_counter()
            sent = 0
            while sent < total:
                n = min(chunk, total - sent)
                s.sendall(data[:n])
                sent += n
            if s.recv(2) != b"ok":
                raise PhaseError("loopback receiver did not acknowledge")
            elapsed = time.perf_counter() - started
    finally:
        sink.wait(30)
    return RateResult("loopback TCP", total, elapsed, f"{total // (1024 * 1024)} MiB in {chunk // 1024} KiB sends")


def disk_write_rate(directory: Path, count_mib: int = 1024,
                    flags: tuple[str, ...] = ("oflag=direct", "conv=fdatasync")) -> RateResult:
    """`dd` `count_mib` MiB of zeros to a file in `directory` with the first of `flags` dd
    accepts (default O_DIRECT, fdatasync if refused)."""
    target = directory / "dd-bench.tmp"
    try:
        for flag in flags:
            proc = subprocess.run(["dd", "if=/dev/zero", f"of={target}", "bs=1M", f"count={count_mib}", flag],
                                  capture_output=True, text=True, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
            match = DD_SUMMARY.search(proc.stderr)
            if proc.returncode == 0 and match:
                size, seconds = int(match.group(1)), float(match.group(2).replace(",", "."))
                return RateResult("disk sequential write", size, seconds, f"dd bs=1M count={count_mib} {flag}")
        raise PhaseError(f"dd failed: {proc.stderr.strip()}")
    finally:
        target.unlink(missing_ok=True)
