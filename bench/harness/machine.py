"""The machine a benchmark ran on: its figures (cores, CPU model, memory, kernel, load), which
every results file records, and its limits measured: loopback TCP throughput, sequential disk
write rate, what waking costs, how steady the CPU's speed is, and the kernel's autogroup
setting. A rate is only read beside the machine that gave it."""
from __future__ import annotations

import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.phases import PhaseError
from harness.stats import MB, Spread, spread_of

GIB = 1024 ** 3
AUTOGROUP_SETTING = Path("/proc/sys/kernel/sched_autogroup_enabled")
CPU_INFO = Path("/proc/cpuinfo")
MEMORY_INFO = Path("/proc/meminfo")
SOCKET_BUFFER = 4 * 1024 * 1024
SINK = Path(__file__).with_name("loopback_sink.py")
DD_SUMMARY = re.compile(r"^(\d+) bytes .* copied, ([\d.,]+) s", re.MULTILINE)


@dataclass(frozen=True)
class RateResult:
    """Bytes moved in seconds: loopback TCP or sequential disk writes."""

    what: str
    bytes: int
    seconds: float
    detail: str = ""

    @property
    def mbps(self) -> float:
        return self.bytes / self.seconds / MB


@dataclass(frozen=True)
class WakeCostResult:
    """The CPU of one fixed piece of Python work run back to back, and run once after each
    sleep of `gap_ms`: what being woken costs a process on this machine (medians, µs). A
    process woken every few ms (a replica at a steady rate) pays the slower figure per record."""

    hot_us: float
    after_sleep_us: dict[float, float]   # ms asleep before the work -> its CPU in µs

    def slowdown(self, gap_ms: float) -> float:
        """How many times the back-to-back CPU the work costs after `gap_ms` asleep."""
        return self.after_sleep_us[gap_ms] / self.hot_us

    def describe(self) -> str:
        after = ", ".join(f"{self.slowdown(gap):.1f}x after {gap:g} ms" for gap in sorted(self.after_sleep_us))
        return f"Python work woken from sleep: {self.hot_us:.0f} µs of CPU back to back, {after} asleep"


@dataclass(frozen=True)
class CpuSpeedResult:
    """The thread CPU, in ms, of one fixed piece of Python run `len(cpu_ms)` times back to back,
    `when` in the benchmark. The work never changes, so its spread is the machine's own: on a
    VM the same code runs faster or slower from one second to the next as the host's other
    guests come and go, and every rate measured beside it moves with it."""

    when: str
    cpu_ms: tuple[float, ...]

    @property
    def runs(self) -> Spread:
        """The runs' CPU times; their spread is judged as the consume spread is."""
        return Spread(self.cpu_ms)

    def describe(self) -> str:
        runs = self.runs
        return (f"CPU speed ({self.when}): one fixed piece of Python, {len(self.cpu_ms)} runs back to back,"
                f" took {runs.low:.0f}-{runs.high:.0f} ms of CPU (median {runs.median:.0f}):"
                f" spread {runs.spread:.0%}, the fastest run {runs.median / runs.low:.2f}x the median's speed")


def cpu_speed_spread(results: list[CpuSpeedResult]) -> float | None:
    """The spread of every run of `results` together (None when none ran)."""
    runs = spread_of(ms for r in results for ms in r.cpu_ms)
    return runs.spread if runs else None


def machine_figures(cpu_info: Path = CPU_INFO, memory_info: Path = MEMORY_INFO) -> dict[str, Any]:
    """What a results file says of the machine: cores, CPU model, memory, OS and kernel,
    Python, the 1-minute load average now, and whether autogroup scheduling is on. A figure
    this machine does not have is None."""
    def read(path: Path) -> str:
        try:
            return path.read_text()
        except OSError:
            return ""
    model = re.search(r"^model name\s*:\s*(.+)$", read(cpu_info), re.MULTILINE)
    memory = re.search(r"^MemTotal:\s*(\d+) kB", read(memory_info), re.MULTILINE)
    return {"cores": os.cpu_count(), "cpu": model.group(1).strip() if model else platform.processor() or None,
            "memory_gib": round(int(memory.group(1)) * 1024 / GIB, 1) if memory else None,
            "system": f"{platform.system()} {platform.release()}", "python": platform.python_version(),
            "load_average_1m": round(os.getloadavg()[0], 2), "sched_autogroup": autogroup_enabled()}


def describe_machine(figures: dict[str, Any]) -> str:
    """`machine_figures` in one line: "2 cores (AMD EPYC 7B13), 7.8 GiB, Linux 6.1, Python 3.11, load 0.4"."""
    cpu = f" ({figures['cpu']})" if figures.get("cpu") else ""
    memory = f", {figures['memory_gib']:g} GiB" if figures.get("memory_gib") is not None else ""
    load = f", load {figures['load_average_1m']:g} at the start" if figures.get("load_average_1m") is not None else ""
    return (f"{figures.get('cores')} cores{cpu}{memory}, {figures.get('system')}, Python {figures.get('python')}"
            f"{load}")


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
