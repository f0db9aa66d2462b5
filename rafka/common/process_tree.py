"""The processes a command started, found through Linux's /proc and stopped for good.

`rafka up` starts Ray, and Ray's raylet starts processes of its own: its dashboard and
runtime-env agents, and the workers that host the brokers' actors. When the raylet dies
before them (killed, or too slow to stop under load) they are reparented, by default to
init, out of reach of `rafka up`'s process group and of anyone walking its process tree;
the agents then linger for minutes. `become_subreaper` makes the calling process adopt them
instead, so "every process descended from `rafka up`" stays the whole session until `up`
exits, and `stop_processes` ends them: SIGTERM, then SIGKILL, each within a bound.

A process is named by its pid and its start time (clock ticks after boot, /proc/<pid>/stat),
so a pid the kernel has since given to another process is never signalled.
"""
from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h

Processes = dict[int, int]   # pid -> start time, in clock ticks after boot


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state letter, start time) of `pid`, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # After the command's name: state (field 3), ppid (4), ..., starttime (22).
    return int(fields[1]), fields[0], int(fields[19])


def start_time(pid: int) -> int | None:
    """When `pid` started (clock ticks after boot), or None when no such process runs."""
    stat = _stat(pid)
    return stat[2] if stat else None


def descendants(root: int) -> Processes:
    """Every process below `root` in the process tree (children, their children, ...),
    `root` itself excluded, with their start times."""
    children: dict[int, list[tuple[int, int]]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None:
                children.setdefault(stat[0], []).append((int(entry), stat[2]))
    found: Processes = {}
    todo = [root]
    while todo:
        for pid, started in children.get(todo.pop(), []):
            if pid not in found:
                found[pid] = started
                todo.append(pid)
    return found


def naming(text: str, programs: tuple[str, ...] = ()) -> Processes:
    """Every process whose command line contains `text` (a path unique to one session, such
    as a Ray session directory: never a program's name, which other sessions share) and,
    when `programs` is given, whose executable is one of them or lies under one of them (so
    that, say, a `tail` of the session's log files is not taken for part of it)."""
    found: Processes = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if text.encode() not in f.read():
                        continue
                if programs and not os.path.realpath(f"/proc/{entry}/exe").startswith(programs):
                    continue
            except OSError:
                continue
            started = start_time(int(entry))
            if started is not None:
                found[int(entry)] = started
    return found


def running(processes: Processes) -> Processes:
    """Those of `processes` still running: same pid, same start time, not a zombie."""
    alive = {}
    for pid, started in processes.items():
        stat = _stat(pid)
        if stat is not None and stat[2] == started and stat[1] != "Z":
            alive[pid] = started
    return alive


@dataclass
class StopReport:
    """What `stop_processes` did: pids that exited on SIGTERM, pids that needed SIGKILL, and
    pids still there after it (a process stuck in the kernel, or not ours to signal)."""
    terminated: list[int] = field(default_factory=list)
    killed: list[int] = field(default_factory=list)
    survivors: list[int] = field(default_factory=list)

    @property
    def stopped(self) -> list[int]:
        return sorted(self.terminated + self.killed)


def stop_processes(processes: Processes, grace_s: float = 5.0, kill_wait_s: float = 5.0) -> StopReport:
    """SIGTERM every process of `processes` still running, SIGKILL those still there after
    `grace_s`, and wait up to `kill_wait_s` for them to go; children of this process are
    reaped. Returns what happened to each."""
    report = StopReport()
    alive = running(processes)
    if not alive:
        return report
    signal_processes(alive, signal.SIGTERM)
    left = wait_gone(alive, grace_s)
    report.terminated = sorted(set(alive) - set(left))
    if left:
        log.warning("processes %s did not exit %.1f s after SIGTERM; killing them", sorted(left), grace_s)
        signal_processes(left, signal.SIGKILL)
        stuck = wait_gone(left, kill_wait_s)
        report.killed = sorted(set(left) - set(stuck))
        report.survivors = sorted(stuck)
    return report


def signal_processes(processes: Processes, sig: int) -> None:
    """Send `sig` to each of `processes` that is still the same process (pid and start time)."""
    for pid, started in processes.items():
        if start_time(pid) == started:  # still the same process: never signal a reused pid
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def wait_gone(processes: Processes, timeout_s: float) -> Processes:
    """Wait until none of `processes` runs, or `timeout_s`; returns those still running.
    Our own children are reaped on the way (a zombie child of ours does not run, but it
    would stay in the process table until we exit)."""
    deadline = time.monotonic() + timeout_s
    while True:
        _reap(processes)
        alive = running(processes)
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.05)


def _reap(processes: Processes) -> None:
    for pid in processes:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not our child, or already reaped
            pass


def become_subreaper() -> bool:
    """Make this process adopt its orphaned descendants (Linux's PR_SET_CHILD_SUBREAPER) rather
    than let init have them; False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        log.warning("prctl(PR_SET_CHILD_SUBREAPER) failed: %s", os.strerror(ctypes.get_errno()))
        return False
    return True
