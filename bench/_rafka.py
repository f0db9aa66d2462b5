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
from collections.abc import Iterator
from pathlib import Path

from harness.phases import PhaseError

from rafka.common.ports import unused_port

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # Ray on 127.0.0.1, before ray is imported

ADDRESS = re.compile(r"^\d+\.\d+\.\d+\.\d+:\d+(,\S+)?$")


@dataclasses.dataclass(frozen=True)
class RunningRafka:
    bootstrap_servers: str
    pid: int  # the `rafka up` server process; Ray and ZooKeeper run below it


@dataclasses.dataclass(frozen=True)
class StartupResult:
    """Seconds `rafka up --detach` took to print its bootstrap address."""

    seconds: float
    bootstrap: str


def rafka_up(data_dir: Path, *, port: int | None = None, config: Path | None = None,
             timeout_s: float = 120.0) -> tuple[RunningRafka, float]:
    """Run `rafka up --detach` on `data_dir` (on `port`, a free one by default, with the
    properties file `config`): the broker serving, and the seconds until the command printed
    its bootstrap address. Raises PhaseError when it did not."""
    argv = [rafka_executable(), "up", "--detach", "--data-dir", str(data_dir), "--port", str(port or unused_port()),
            "--timeout", str(timeout_s)] + (["--config", str(config)] if config else [])
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s + 30)
    elapsed = time.perf_counter() - started
    address = next((line.strip() for line in proc.stdout.splitlines() if ADDRESS.match(line.strip())), "")
    if proc.returncode != 0 or not address:
        raise PhaseError(f"`rafka up` exited {proc.returncode} without a bootstrap address;"
                         f" stdout: {proc.stdout.strip()!r}; stderr tail:\n{_tail(proc.stderr)}")
    state = json.loads((data_dir / "rafka.state.json").read_text())
    return RunningRafka(address, int(state["pid"])), elapsed


def rafka_down(data_dir: Path) -> None:
    """`rafka down` on `data_dir`; a failure is said on stderr, not raised (it runs in cleanup)."""
    down = subprocess.run([rafka_executable(), "down", "--data-dir", str(data_dir)], capture_output=True, text=True,
                          timeout=300)
    if down.returncode != 0:
        print(f"  rafka down exited {down.returncode}: {down.stderr.strip()}", file=sys.stderr)


@contextlib.contextmanager
def rafka_cluster(data_dir: Path, timeout_s: float = 120.0) -> Iterator[RunningRafka]:
    """One rafka broker started as users start it, `rafka up --detach`, in processes of its own.

    The clients then run in the benchmark process, as they would in a user's program; an
    in-process `Cluster` would make this process Ray's driver too, and its threads would
    compete with the client being measured (measured here: 631k against 790–850k rec/s
    for 100 B consume).
    """
    running, _ = rafka_up(data_dir, timeout_s=timeout_s)
    try:
        yield running
    finally:
        rafka_down(data_dir)


def rafka_executable() -> str:
    """The `rafka` console script of the virtualenv running this benchmark."""
    beside = Path(sys.executable).parent / "rafka"
    found = str(beside) if beside.exists() else shutil.which("rafka")
    if not found:
        raise PhaseError("rafka executable not found next to the interpreter nor on PATH")
    return found


def time_rafka_up(data_dir: Path, timeout_s: float = 120.0) -> StartupResult:
    """Seconds from running `rafka up --detach` to it printing the bootstrap address; then `rafka down`."""
    try:
        running, elapsed = rafka_up(data_dir, timeout_s=timeout_s)
        return StartupResult(elapsed, running.bootstrap_servers)
    finally:
        rafka_down(data_dir)


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
