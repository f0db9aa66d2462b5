"""Machine limits: loopback TCP throughput, sequential disk write rate, what waking costs, how
steady the CPU's speed is, and the kernel's autogroup setting."""
from __future__ import annotations

import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _kafka import PhaseError
from _results import CpuSpeedResult, RateResult, WakeCostResult

GIB = 1024 ** 3
AUTOGROUP_SETTING = Path("/proc/sys/kernel/sched_autogroup_enabled")
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


def _python_work() -> int:
    """A fixed piece of interpreter work (dict updates in a loop, some tens of µs when hot): the
    kind of code a replica or the front end runs per record."""
    counts: dict[int, int] = {}
    for i in range(400):
        counts[i % 37] = counts.get(i % 37, 0) + i
    return len(counts)


def wake_cost(gaps_ms: tuple[float, ...], chunks: int = 300) -> WakeCostResult:
    """The thread CPU of `_python_work` run `chunks` times back to back, and `chunks` times
    each after a sleep of each of `gaps_ms` (medians; the sleep itself not counted).

    A process woken every few milliseconds finds its caches and branch predictors cold (on a
    VM, other guests ran on the core meanwhile), so the same code costs it more CPU per call
    than a busy one: the reason a replica's CPU per record falls as its rate rises.
    """
    def timed(gap_s: float) -> float:
        costs = []
        for _ in range(chunks):
            if gap_s:
                time.sleep(gap_s)
            started = time.thread_time_ns()
            _python_work()
            costs.append(time.thread_time_ns() - started)
        return statistics.median(costs) / 1000

    timed(0)   # (warm the code once)
    return WakeCostResult(timed(0), {gap: timed(gap / 1000) for gap in gaps_ms})


# `_python_work` calls in one CPU speed run: about 0.1 s here. Fixed, not calibrated, so the runs
# before and after the pairs (and those of other benchmark runs) time the same work.
CPU_SPEED_CALLS = 1500


def cpu_speed(when: str, runs: int = 40, calls: int = CPU_SPEED_CALLS) -> CpuSpeedResult:
    """The thread CPU of one fixed piece of Python (`_python_work` `calls` times) run `runs`
    times back to back.

    Measured here, runs of the same work differed by up to ~1.6x, the fast ones in streaks of
    a second or two (the host's doing: the guest's steal time stays near zero): a consume run
    that falls in one is faster whichever broker serves it. This prints the machine's own
    spread beside the consume spread target.
    """
    _python_work()   # (warm the code once)
    cpu_ms = []
    for _ in range(runs):
        started = time.thread_time_ns()
        for _ in range(calls):
            _python_work()
        cpu_ms.append((time.thread_time_ns() - started) / 1_000_000)
    return CpuSpeedResult(when, tuple(cpu_ms))


def autogroup_enabled(setting: Path = AUTOGROUP_SETTING) -> bool | None:
    """Whether Linux's autogroup scheduling is on (`kernel.sched_autogroup_enabled`): then each
    session is a scheduling group of its own, and Ray starts every worker process (rafka's front
    end, each replica) in a session of its own. None where the kernel has no such setting."""
    try:
        return setting.read_text().strip() != "0"
    except OSError:
        return None
