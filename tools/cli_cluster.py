"""A cluster driven only through the `rafka` command, as an operator or a fault script drives
one: `rafka up --detach`, `rafka broker stop ID --kill`, `rafka broker start ID`,
`rafka status --output json`, `rafka down`. It offers the methods of `rafka.cluster.Cluster`
that the failover drill calls, so the drill runs on either (`tools/failover_drill.py --cli`).

Every command's exit code is checked: a kill that exits non-zero, or whose processes are
still running afterwards, raises `CommandFailed`, whatever it did to the cluster.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

RAFKA = [sys.executable, "-m", "rafka.cli.main"]


class CommandFailed(AssertionError):
    """A `rafka` command exited non-zero, or did not do what its exit code said."""


class CliCluster:
    """`brokers` brokers in `data_dir` on ephemeral loopback ports, from `properties` (Kafka's
    names), each operation one `rafka` command."""

    def __init__(self, data_dir: str | Path, brokers: int, properties: dict[str, str],
                 command_timeout_s: float = 180.0) -> None:
        self.data_dir = Path(data_dir)
        self.broker_count = brokers
        self._properties = properties
        self._timeout_s = command_timeout_s
        self.bootstrap_servers = ""
        self.kills: list[dict] = []   # each `broker stop --kill`'s JSON report

    def run(self, *args: str) -> subprocess.CompletedProcess:
        """One `rafka` command on this cluster's data dir; CommandFailed when it exits non-zero."""
        done = subprocess.run([*RAFKA, *args, "--data-dir", str(self.data_dir)], capture_output=True, text=True,
                              timeout=self._timeout_s)
        if done.returncode != 0:
            raise CommandFailed(f"`rafka {' '.join(args)}` exited {done.returncode}: {done.stderr.strip()[-2000:]}")
        return done

    def start(self) -> "CliCluster":
        self.data_dir.mkdir(parents=True, exist_ok=True)
        config = self.data_dir / "server.properties"
        config.write_text("".join(f"{key}={value}\n" for key, value in self._properties.items()))
        up = self.run("up", "--brokers", str(self.broker_count), "--detach", "--port", "0", "--config", str(config))
        self.bootstrap_servers = up.stdout.strip()
        return self

    def kill_broker(self, broker_id: int) -> dict[str, int]:
        """`rafka broker stop ID --kill`: exit 0, and every pid it reports gone when it returns."""
        from rafka.cli.state import pid_alive

        report = json.loads(self.run("broker", "stop", str(broker_id), "--kill", "--output", "json").stdout)
        self.kills.append(report)
        pids = report["pids"]
        survivors = {name: pid for name, pid in pids.items() if pid_alive(pid)}
        if not report["ok"] or survivors:
            raise CommandFailed(f"`rafka broker stop {broker_id} --kill` exited 0 but left {survivors} running")
        return pids

    def restart_broker(self, broker_id: int) -> None:
        self.run("broker", "start", str(broker_id))

    def broker_status(self) -> dict[int, dict]:
        """Each broker's own report, from `rafka status --output json`."""
        report = json.loads(self.run("status", "--output", "json").stdout)
        return {int(b): r for b, r in report["brokers"].items()}

    def stop(self) -> None:
        self.run("down")
