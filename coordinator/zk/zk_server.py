"""A private standalone ZooKeeper server for `rafka up` without `zookeeper.connect`.

Runs the Apache ZooKeeper jars of Debian's `zookeeper` package with `java`, as a child in
its own process group, bound to 127.0.0.1 only (client port; the admin HTTP server is
disabled; no JMX port). Everything lives in `data_dir`:

    zoo.cfg          the generated configuration
    version-2/       ZooKeeper's snapshots and transaction logs
    zookeeper.out    the server's stdout/stderr (its log, via slf4j-simple)
    zookeeper.pid    the java pid, so `rafka down` can stop a detached server

`start()` returns once the server answers `srvr` as serving; `stop()` sends SIGTERM, then
SIGKILL after a deadline, by pid.
"""
from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from rafka.common.errors import StartupError
from rafka.common.ports import port_is_free, unused_port

log = logging.getLogger(__name__)

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
# zookeeper.jar's manifest Class-Path names its dependencies (netty, jute, slf4j-api...);
# slf4j-api alone logs nothing, so add the simple binding: it writes to stderr -> zookeeper.out.
SLF4J_BINDING_JAR = Path("/usr/share/java/slf4j-simple.jar")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
NOT_FOUND_MESSAGE = "ZooKeeper not found: install Debian's zookeeper package (apt-get install zookeeper)"
PID_FILE = "zookeeper.pid"
OUT_FILE = "zookeeper.out"
CONFIG_FILE = "zoo.cfg"


def find_java() -> str:
    java = shutil.which("java") or ("/usr/bin/java" if os.access("/usr/bin/java", os.X_OK) else None)
    if java is None or not ZOOKEEPER_JAR.exists():
        raise StartupError(NOT_FOUND_MESSAGE)
    return java


def pid_file_path(data_dir: Path | str) -> Path:
    return Path(data_dir) / PID_FILE


def read_pid_file(data_dir: Path | str) -> int | None:
    """The pid recorded in `<data_dir>/zookeeper.pid`, or None when absent or unreadable."""
    try:
        return int(pid_file_path(data_dir).read_text().strip())
    except (OSError, ValueError):
        return None


def is_zookeeper_process(pid: int) -> bool:
    """True when `pid` is alive and is a ZooKeeper server (guards against pid reuse)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[-1].split()[0] if ")" in stat else ""
    return state != "Z" and MAIN_CLASS.encode() in cmdline


def stop_pid(pid: int, timeout_s: float = 10.0) -> bool:
    """SIGTERM `pid`, SIGKILL it if still alive after `timeout_s`. Only acts on a ZooKeeper
    process. Returns True when the process is gone."""
    if not is_zookeeper_process(pid):
        return True
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    if _wait_gone(pid, timeout_s):
        return True
    log.warning("ZooKeeper pid %d ignored SIGTERM for %.1f s; sending SIGKILL", pid, timeout_s)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    return _wait_gone(pid, 5.0)


def _wait_gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:  # reap it if it is our child
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                return True
        except ChildProcessError:
            pass
        if not is_zookeeper_process(pid):
            return True
        time.sleep(0.05)
    return not is_zookeeper_process(pid)


def stop_from_pid_file(data_dir: Path | str, timeout_s: float = 10.0) -> bool:
    """Stop the server recorded in `data_dir` (for `rafka down`); removes the pid file.
    Returns True when no server is left running."""
    pid = read_pid_file(data_dir)
    gone = True if pid is None else stop_pid(pid, timeout_s)
    if gone:
        pid_file_path(data_dir).unlink(missing_ok=True)
    return gone


def srvr(host: str, port: int, timeout_s: float = 1.0) -> str | None:
    """The answer to ZooKeeper's `srvr` four-letter command, or None when nobody answers."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as s:
            s.sendall(b"srvr")
            chunks = []
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                chunks.append(chunk)
            return b"".join(chunks).decode("utf-8", "replace")
    except OSError:
        return None


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM when the starting process dies (even by kill -9).

    A private ZooKeeper must not outlive the `rafka up` (or test) that started it; it
    stays in its parent's process group so that killing the group stops it too.
    """
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class EmbeddedZooKeeper:
    """One standalone ZooKeeper server in `data_dir`, listening on 127.0.0.1:`port`.

    Not thread-safe; one owner starts and stops it. The java process gets its own process
    group, so a Ctrl-C to the terminal does not reach it: the owner stops it.
    """

    HOST = "127.0.0.1"

    def __init__(self, data_dir: Path | str, port: int | None = None, *, tick_time_ms: int = 500,
                 max_session_timeout_ms: int = 60000, heap_mb: int = 256) -> None:
        self.data_dir = Path(data_dir)
        self.port = port if port is not None else unused_port(self.HOST)   # (rafka/common/ports.py: why)
        self.tick_time_ms = tick_time_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.heap_mb = heap_mb
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def connect_string(self) -> str:
        return f"{self.HOST}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def config_path(self) -> Path:
        return self.data_dir / CONFIG_FILE

    @property
    def log_path(self) -> Path:
        return self.data_dir / OUT_FILE

    def write_config(self) -> Path:
        # tickTime 500 ms allows sessions from 1 s (2 ticks) so tests can expire them fast;
        # maxSessionTimeout keeps Kafka's default zookeeper.session.timeout.ms (18 s) honoured.
        lines = [
            f"dataDir={self.data_dir.resolve()}",
            f"clientPort={self.port}",
            f"clientPortAddress={self.HOST}",
            "admin.enableServer=false",
            f"tickTime={self.tick_time_ms}",
            f"minSessionTimeout={2 * self.tick_time_ms}",
            f"maxSessionTimeout={self.max_session_timeout_ms}",
            "maxClientCnxns=0",
            "4lw.commands.whitelist=srvr,ruok",
            "autopurge.snapRetainCount=3",
            "autopurge.purgeInterval=1",
            "preAllocSize=4096",
        ]
        self.config_path.write_text("\n".join(lines) + "\n")
        return self.config_path

    def command(self) -> list[str]:
        java = find_java()
        classpath = [str(ZOOKEEPER_JAR)]
        if SLF4J_BINDING_JAR.exists():
            classpath.append(str(SLF4J_BINDING_JAR))
        return [
            java, f"-Xmx{self.heap_mb}m", "-XX:+UseSerialGC",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS",
            "-Dzookeeper.admin.enableServer=false",
            "-Dzookeeper.jmx.log4j.disable=true",
            "-cp", ":".join(classpath), MAIN_CLASS, str(self.config_path.resolve()),
        ]

    def start(self, timeout_s: float = 20.0) -> "EmbeddedZooKeeper":
        """Start the server and wait until it serves clients. Raises StartupError when java or
        the jar is missing, another server of this data dir runs, or it does not come up."""
        if self._proc is not None and self._proc.poll() is None:
            return self
        cmd = self.command()  # raises StartupError when ZooKeeper is not installed
        self.data_dir.mkdir(parents=True, exist_ok=True)
        old = read_pid_file(self.data_dir)
        if old is not None and is_zookeeper_process(old):
            raise StartupError(f"A ZooKeeper server (pid {old}) already runs in {self.data_dir}; "
                               "stop it first (rafka down)")
        if not port_is_free(self.HOST, self.port):
            raise StartupError(f"Cannot start ZooKeeper: {self.connect_string} is already in use")
        self.write_config()
        with open(self.log_path, "ab") as out:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                          cwd=self.data_dir, preexec_fn=_die_with_parent)
        pid_file_path(self.data_dir).write_text(f"{self._proc.pid}\n")
        log.info("started ZooKeeper pid %d on %s, data in %s", self._proc.pid, self.connect_string, self.data_dir)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                code = self._proc.returncode
                self._proc = None
                pid_file_path(self.data_dir).unlink(missing_ok=True)
                raise StartupError(f"ZooKeeper exited with code {code} while starting on {self.connect_string}; "
                                   f"see {self.log_path}:\n{self._log_tail()}")
            answer = srvr(self.HOST, self.port, timeout_s=1.0)
            if answer and "Mode:" in answer:
                return self
            time.sleep(0.05)
        self.stop()
        raise StartupError(f"ZooKeeper did not start serving on {self.connect_string} within {timeout_s:.0f} s; "
                           f"see {self.log_path}:\n{self._log_tail()}")

    def _log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM the server, SIGKILL it after `timeout_s`; idempotent."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                log.warning("ZooKeeper pid %d ignored SIGTERM for %.1f s; sending SIGKILL", proc.pid, timeout_s)
                proc.kill()
                proc.wait(timeout=10)
        pid_file_path(self.data_dir).unlink(missing_ok=True)
        log.info("stopped ZooKeeper pid %d", proc.pid)

    def __enter__(self) -> "EmbeddedZooKeeper":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
