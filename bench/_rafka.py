"""rafka under test, started as users start it: the real `rafka up --detach` and `rafka down`."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

from _kafka import PhaseError, unused_port
from _results import StartupResult

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # Ray on 127.0.0.1, before ray is imported

ADDRESS = re.compile(r"^\d+\.\d+\.\d+\.\d+:\d+(,\S+)?$")


@dataclasses.dataclass(frozen=True)
class RunningRafka:
    bootstrap_servers: str
    pid: int  # the `rafka up` server process; Ray and ZooKeeper run below it


@contextlib.contextmanager
def rafka_cluster(data_dir: Path, timeout_s: float = 120.0) -> Iterator[RunningRafka]:
    """One rafka broker started as users start it, `rafka up --detach`, in processes of its own.

    The clients then run in the benchmark process, as they would in a user's program; an
    in-process `Cluster` would make this process Ray's driver too, and its threads would
    compete with the client being measured (measured here: 631k against 790–850k rec/s
    for 100 B consume).
    """
    rafka = rafka_executable()
    argv = [rafka, "up", "--detach", "--data-dir", str(data_dir), "--port", str(unused_port()),
            "--timeout", str(timeout_s)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s + 30)
    address = next((line.strip() for line in proc.stdout.splitlines() if ADDRESS.match(line.strip())), "")
    if proc.returncode != 0 or not address:
        raise PhaseError(f"`rafka up` exited {proc.returncode} without a bootstrap address;"
                         f" stderr tail:\n{_tail(proc.stderr)}")
    state = json.loads((data_dir / "rafka.state.json").read_text())
    try:
        yield RunningRafka(address, int(state["pid"]))
    finally:
        subprocess.run([rafka, "down", "--data-dir", str(data_dir)], capture_output=True, text=True, timeout=120)


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
