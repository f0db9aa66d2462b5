"""rafka under test: an in-process `Cluster`, and the real `rafka up --detach` command."""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

from _kafka import PhaseError, unused_port
from _results import StartupResult

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # Ray on 127.0.0.1, before ray is imported

ADDRESS = re.compile(r"^\d+\.\d+\.\d+\.\d+:\d+(,\S+)?$")


@contextlib.contextmanager
def rafka_cluster(data_dir: Path) -> Iterator[Any]:
    """One rafka broker with its private ZooKeeper and local Ray; yields the started `Cluster`."""
    from rafka.cluster import Cluster

    cluster = Cluster(data_dir, brokers=1, first_port=0).start()
    try:
        yield cluster
    finally:
        cluster.stop()


def rafka_executable() -> str:
    """The `rafka` console script of the virtualenv running this benchmark."""
    beside = Path(sys.executable).parent / "rafka"
    found = str(beside) if beside.exists() else shutil.which("rafka")
    if not found:
        raise PhaseError("rafka executable not found next to the interpreter nor on PATH")
    return found


def time_rafka_up(data_dir: Path, timeout_s: float = 120.0) -> StartupResult:
    """Seconds from running `rafka up --detach` to it printing the bootstrap address; then `rafka down`."""
    rafka = rafka_executable()
    argv = [rafka, "up", "--detach", "--data-dir", str(data_dir), "--port", str(unused_port()),
            "--timeout", str(timeout_s)]
    started = time.perf_counter()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s + 30)
        elapsed = time.perf_counter() - started
        address = next((line.strip() for line in proc.stdout.splitlines() if ADDRESS.match(line.strip())), "")
        if proc.returncode != 0 or not address:
            raise PhaseError(f"`rafka up` exited {proc.returncode} without a bootstrap address;"
                             f" stdout: {proc.stdout.strip()!r}; stderr tail:\n{_tail(proc.stderr)}")
        return StartupResult(elapsed, address)
    finally:
        down = subprocess.run([rafka, "down", "--data-dir", str(data_dir)], capture_output=True, text=True,
                              timeout=120)
        if down.returncode != 0:
            print(f"  rafka down exited {down.returncode}: {down.stderr.strip()}", file=sys.stderr)


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
