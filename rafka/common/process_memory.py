"""Memory of a broker's processes as Linux accounts it: proportional set size (PSS), read from
/proc/<pid>/smaps_rollup. PSS splits pages shared between processes (the interpreter, Ray's
core worker libraries) among them, so the sum over processes is what they cost together;
RSS would count each shared page once per process. `rafka status` and the benchmarks use it."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

MIB = 1 << 20


def pss_bytes(pid: int) -> int:
    """Proportional set size of `pid` in bytes (0 if it has exited or cannot be read)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def broker_memory(pids: dict[str, int], is_replica: Iterable[str]) -> dict[str, int]:
    """PSS of a broker's processes, by kind: `pids` maps actor names to pids; the names in
    `is_replica` are its partition replicas, the rest its services (coordinator, front end).
    Returns bytes: total, replicas, services, and the count of live replica processes."""
    replicas = set(is_replica)
    sizes = {name: pss_bytes(pid) for name, pid in pids.items()}
    replica_bytes = sum(size for name, size in sizes.items() if name in replicas)
    return {"pss_bytes": sum(sizes.values()), "replica_pss_bytes": replica_bytes,
            "service_pss_bytes": sum(sizes.values()) - replica_bytes,
            "live_replicas": sum(1 for name in pids if name in replicas)}
