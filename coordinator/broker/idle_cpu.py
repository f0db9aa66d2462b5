"""Whether the machine has a core to spare: its idle CPU since the last look (`/proc/stat`).

A broker starts spare replica processes ahead of need (`replica_launcher.py`), and each start
costs about half a second of a core (an interpreter and Ray's core worker). Started while
clients keep the cores busy, that time comes out of the clients': measured on 2 cores, the
spares refilled after a topic's creation ran beside the first produce and consume on it and
cut both by a third or more. So spares ahead of need start once the machine has had a
whole core idle (or after waiting a few seconds for one); a start that waits for a process
gets one at once, busy or not.

Pure logic over an injectable reader of the CPU counters.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

IDLE_CORES_WANTED = 1.0   # idle cores, on average since the last look, for work ahead of need


class CpuTimes(NamedTuple):
    """The machine's CPU counters since boot, in clock ticks summed over its CPUs."""

    idle: int
    total: int
    cores: int


def read_cpu_times(path: str = "/proc/stat") -> CpuTimes | None:
    """The counters from `/proc/stat` (idle counts iowait too); None where there is none."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    fields = [int(v) for v in lines[0].split()[1:9]] if lines and lines[0].startswith("cpu ") else []
    if len(fields) < 5:
        return None
    cores = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    # user nice system idle iowait irq softirq steal (guest time is already counted in user)
    return CpuTimes(idle=fields[3] + fields[4], total=sum(fields), cores=max(1, cores))


class IdleCpu:
    """Idle cores on average between one look and the next."""

    def __init__(self, read: Callable[[], CpuTimes | None] = read_cpu_times) -> None:
        self._read = read
        self._last = read()

    def idle_cores(self) -> float | None:
        """Cores idle on average since the previous look (or since this was made); None when
        the machine does not say, or no clock tick passed in between."""
        now, last = self._read(), self._last
        self._last = now
        if now is None or last is None or now.total <= last.total:
            return None
        return now.cores * (now.idle - last.idle) / (now.total - last.total)

    def has_a_core_to_spare(self) -> bool:
        """Whether a core was idle since the previous look; True when unknown (as if idle:
        work ahead of need is then done at once, as it was before this check)."""
        idle = self.idle_cores()
        return idle is None or idle >= IDLE_CORES_WANTED
