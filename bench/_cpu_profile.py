"""Where a benchmark's CPU goes: core-seconds per process over a window (from /proc), the
machine's busy share, and py-spy samples of chosen processes reduced to their hottest frames.

A benchmark that misses a latency target on a small machine has to show whether the time
went to its own code, to the client, or to nobody (an idle machine waiting): these figures
answer that without an external profiler beyond py-spy, which is optional (`pip install
py-spy`; without it only the CPU shares are printed).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds `pid` has used (all its threads), or None once it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S  # utime, stime (fields 14, 15 of stat)


def machine_cpu_s() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, summed over its cores."""
    first = Path("/proc/stat").read_text().splitlines()[0].split()
    values = [int(v) for v in first[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    total = sum(values[:8])  # guest time is already inside user
    return (total - idle) / _TICKS_PER_S, total / _TICKS_PER_S


@dataclass(frozen=True)
class CpuWindow:
    """CPU used over one wall-clock window: each role's core-seconds and the machine's busy share."""

    seconds: float
    by_role: dict[str, float]        # role -> CPU seconds used in the window
    processes: dict[str, int]        # role -> how many processes it summed
    machine_busy: float              # busy share of all the machine's cores, 0..1

    def cores(self, role: str) -> float:
        """Average cores `role` kept busy over the window."""
        return self.by_role.get(role, 0.0) / self.seconds if self.seconds > 0 else 0.0


class CpuSampler:
    """Reads the CPU of `roles` (role -> pids) and of the machine at `start` and at `stop`."""

    def __init__(self, roles: Mapping[str, Iterable[int]]) -> None:
        self._roles = {role: tuple(pids) for role, pids in roles.items()}
        self._before: dict[int, float] = {}
        self._machine: tuple[float, float] = (0.0, 0.0)
        self._started = 0.0

    def start(self) -> None:
        import time

        self._started = time.perf_counter()
        self._machine = machine_cpu_s()
        self._before = {pid: s for pids in self._roles.values() for pid in pids
                        if (s := process_cpu_s(pid)) is not None}

    def stop(self) -> CpuWindow:
        import time

        seconds = time.perf_counter() - self._started
        busy, total = machine_cpu_s()
        by_role: dict[str, float] = {}
        counted: dict[str, int] = {}
        for role, pids in self._roles.items():
            for pid in pids:
                after = process_cpu_s(pid)
                if after is not None and pid in self._before:
                    by_role[role] = by_role.get(role, 0.0) + after - self._before[pid]
                    counted[role] = counted.get(role, 0) + 1
        spent = total - self._machine[1]
        share = (busy - self._machine[0]) / spent if spent > 0 else 0.0
        return CpuWindow(seconds, by_role, counted, share)


# -- py-spy --------------------------------------------------------------------------------

def py_spy_path() -> str | None:
    """py-spy beside this interpreter (the project's virtualenv) or on PATH."""
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


def start_py_spy(pid: int, seconds: float, out: Path, rate_hz: int = 100) -> subprocess.Popen | None:
    """Start sampling `pid` for `seconds` into `out` (py-spy's raw collapsed stacks), without
    pausing it (--nonblocking); None when py-spy is not installed."""
    exe = py_spy_path()
    if exe is None:
        return None
    return subprocess.Popen([exe, "record", "--pid", str(pid), "--duration", str(max(1, round(seconds))),
                             "--rate", str(rate_hz), "--nonblocking", "--format", "raw", "--output", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@dataclass(frozen=True)
class HotFrames:
    """A process's py-spy samples: how many, and the frames that held them."""

    samples: int
    self_share: list[tuple[str, float]]       # innermost frame -> share of the samples
    inclusive_share: list[tuple[str, float]]  # any frame on the stack -> share of the samples


def _frame_label(frame: str) -> str:
    """'handle (rafka/net/handlers.py:120)' -> 'handle (handlers.py)': lines vary, files do not."""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    return f"{name} ({Path(path).name})" if path else name


def hot_frames(collapsed: Iterable[str], top: int = 8) -> HotFrames:
    """The `top` frames by self and by inclusive share from py-spy's raw output: lines of
    'frame;frame;...;innermost count', the outermost frame first (a thread's name may lead)."""
    own: Counter[str] = Counter()
    anywhere: Counter[str] = Counter()
    samples = 0
    for line in collapsed:
        stack, _, count_text = line.rstrip("\n").rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_frame_label(f) for f in stack.split(";") if f]
        if not frames:
            continue
        samples += count
        own[frames[-1]] += count
        for frame in set(frames):
            anywhere[frame] += count
    if not samples:
        return HotFrames(0, [], [])

    def shares(counter: Counter[str]) -> list[tuple[str, float]]:
        return [(frame, n / samples) for frame, n in counter.most_common(top)]

    return HotFrames(samples, shares(own), shares(anywhere))


def read_hot_frames(path: Path, top: int = 8) -> HotFrames | None:
    """`hot_frames` of a py-spy raw file, or None when py-spy wrote nothing there."""
    try:
        with path.open() as f:
            return hot_frames(f, top)
    except OSError:
        return None
