"""Process-tree memory: descendants of a pid (via /proc/*/stat) and their PSS (smaps_rollup)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from harness.stats import MIB

from rafka.common.process_memory import pss_bytes


@dataclass(frozen=True)
class MemoryResult:
    """Proportional set size of the idle cluster's processes."""

    total_bytes: int
    processes: tuple[tuple[int, str, int], ...]  # (pid, name, pss bytes)
    driver_bytes: int  # the benchmark process itself (not in total_bytes)

    @property
    def total_mib(self) -> float:
        return self.total_bytes / MIB


def _stat(pid: int) -> tuple[str, int] | None:
    """(command name, parent pid) of `pid`, or None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The name is in parentheses and may itself hold spaces or parentheses.
    name = raw[raw.index("(") + 1:raw.rindex(")")]
    fields = raw[raw.rindex(")") + 2:].split()
    return name, int(fields[1])


def describe(pid: int, fallback: str) -> str:
    """A short readable name: a Ray worker's title, a Python script's file name, or the executable."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return fallback
    argv = [a for a in argv if a]
    if not argv:
        return fallback
    if argv[0].startswith("ray::"):
        return argv[0].split()[0]
    script = next((a for a in argv[1:] if a.endswith(".py")), None)
    name = Path(script or argv[0]).name
    if name == "java" and any("zookeeper" in a.lower() for a in argv):
        return "java (ZooKeeper)"
    return name


def descendants(root: int) -> dict[int, str]:
    """All live descendants of `root` (not `root` itself): pid -> command name."""
    parents: dict[int, tuple[str, int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (info := _stat(int(entry))) is not None:
            parents[int(entry)] = info
    children: dict[int, list[int]] = {}
    for pid, (_, ppid) in parents.items():
        children.setdefault(ppid, []).append(pid)
    found: dict[int, str] = {}
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        found[pid] = describe(pid, parents[pid][0])
        stack.extend(children.get(pid, []))
    return found


def tree_pss(root: int | None = None, *, include_root: bool = False) -> MemoryResult:
    """Total PSS of every descendant of `root` (default: this process); `root`'s own PSS is
    counted in the total only with `include_root` (the server process of `rafka up` is part
    of the cluster; the benchmark process is not)."""
    root = os.getpid() if root is None else root
    members = dict(descendants(root))
    if include_root:
        members[root] = describe(root, "rafka up")
    procs = tuple(sorted(((pid, name, pss_bytes(pid)) for pid, name in members.items()), key=lambda p: -p[2]))
    return MemoryResult(sum(p[2] for p in procs), procs, pss_bytes(os.getpid()))
