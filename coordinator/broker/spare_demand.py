"""How many spare replica processes a broker keeps: many while replicas start, none when quiet.

A spare process (`replica_launcher.py`) lets a new or dormant partition's replica open in
milliseconds instead of waiting ~1 s of a core for a process to start. But an idle Ray worker
still wakes every 10 ms (Ray checks for signals on that timer in every worker; it is not
configurable), ~0.5% of a core each: four spares cost an idle broker more CPU than everything
else it runs. So spares follow demand, as replicas do: `replica.spare.processes` of them while
replicas are being started, and once none has been taken for `replica.dormant.after.ms` (the
broker's notion of "quiet", the same delay after which its idle replicas exit), none: an idle
broker runs no replica process at all. The first wake after a quiet spell then waits for a
process to start (0.6-0.8 s measured on an idle 2-core machine, against the 1.5 s that
bench/density.py holds it to), and the wakes after it find the pool refilled behind it.

Pure logic with an injectable clock; the launcher does the Ray side.
"""
from __future__ import annotations

import time
from typing import Callable

QUIET_SPARES = 0   # spare processes kept once the broker is quiet


class SpareDemand:
    """The number of spare processes wanted now: `target`, or `QUIET_SPARES` (at most `target`)
    once no spare was taken for `quiet_after_s` (None: never quiet, always `target`)."""

    def __init__(self, target: int, quiet_after_s: float | None, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.target = target
        self._quiet_after_s = quiet_after_s
        self._clock = clock
        self._last_taken = clock()   # a broker that just started is busy: its partitions open
        self.starts = 0   # replicas started so far

    def taken(self) -> None:
        """A replica started: it took a spare process, or wanted one."""
        self._last_taken = self._clock()
        self.starts += 1

    def quiet(self) -> bool:
        """Whether no spare was taken for `quiet_after_s`."""
        return self.quiet_in_s() == 0.0

    def quiet_in_s(self) -> float | None:
        """Seconds until the broker counts as quiet (0: it is); None: never."""
        if self._quiet_after_s is None:
            return None
        return max(0.0, self._last_taken + self._quiet_after_s - self._clock())

    @property
    def when_quiet(self) -> int:
        """Spare processes a quiet broker keeps."""
        return min(self.target, QUIET_SPARES)

    def wanted(self) -> int:
        """Spare processes to keep now."""
        return self.when_quiet if self.quiet() else self.target
