"""`rafka up`: start ZooKeeper (unless configured), Ray and the brokers; serve until stopped."""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from rafka.cli.state import DEFAULT_DATA_DIR, clear_state, pid_alive, read_state, write_state
from rafka.common.config import BrokerConfig
from rafka.common.errors import KafkaError, StartupError
from rafka.common.process_tree import become_subreaper, descendants, stop_processes

LEFTOVER_GRACE_S = 5.0  # how long a process left after the cluster's own stop gets for SIGTERM


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "up", help="start a rafka cluster", description=__doc__,
        epilog="examples:\n  rafka up\n  rafka up --brokers 3 --detach --data-dir /tmp/rafka\n"
               "  rafka up --config deploy/server.properties",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", help="a Kafka server.properties file")
    p.add_argument("--brokers", type=int, default=1, help="number of brokers (default 1)")
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR,
                   help=f"where logs, ZooKeeper data and run state live (default {DEFAULT_DATA_DIR})")
    p.add_argument("--port", type=int, default=9092, help="first broker's port (default 9092)")
    p.add_argument("--ray-address", help="join this Ray cluster instead of starting a local one")
    p.add_argument("--detach", action="store_true", help="run in the background; stop with `rafka down`")
    p.add_argument("--timeout", type=float, default=120, help="seconds to wait for serving (default 120)")


def run(args: argparse.Namespace) -> int:
    if args.brokers < 1:
        print("rafka up: --brokers must be at least 1", file=sys.stderr)
        return 2
    data_dir = Path(args.data_dir).absolute()
    existing = read_state(data_dir)
    if existing and pid_alive(existing.get("pid", -1)):
        print(f"rafka up: already running (pid {existing['pid']}) at {existing['bootstrap_servers']}; "
              "stop it with `rafka down`", file=sys.stderr)
        return 1
    if args.detach:
        return _detach(args, data_dir)
    return _serve(args, data_dir)


def _detach(args: argparse.Namespace, data_dir: Path) -> int:
    data_dir.mkdir(parents=True, exist_ok=True)
    clear_state(data_dir)
    argv = [sys.executable, "-m", "rafka.cli.main", *(["--log-level", args.log_level] if args.log_level else []),
            "up", "--brokers", str(args.brokers), "--data-dir", str(data_dir), "--port", str(args.port)]
    if args.config:
        argv += ["--config", str(Path(args.config).absolute())]
    if args.ray_address:
        argv += ["--ray-address", args.ray_address]
    log_path = data_dir / "rafka.out"
    with open(log_path, "ab") as out:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
    deadline = time.monotonic() + args.timeout
    print(f"starting rafka in the background (pid {child.pid}, log {log_path})...", file=sys.stderr)
    while time.monotonic() < deadline:
        state = read_state(data_dir)
        if state and state.get("pid") == child.pid:
            print(state["bootstrap_servers"])
            return 0
        if child.poll() is not None:
            print(f"rafka up failed (exit {child.returncode}); see {log_path}:", file=sys.stderr)
            print(_tail(log_path), file=sys.stderr)
            return 1
        time.sleep(0.2)
    print(f"rafka up: not serving after {args.timeout:.0f} s; see {log_path}", file=sys.stderr)
    os.killpg(child.pid, signal.SIGTERM)
    return 1


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _serve(args: argparse.Namespace, data_dir: Path) -> int:
    try:
        config = BrokerConfig.from_properties(args.config) if args.config else BrokerConfig()
    except (OSError, KafkaError) as e:
        print(f"rafka up: cannot read {args.config}: {e}", file=sys.stderr)
        return 2
    stop = threading.Event()
    _on_stop_signals(stop)
    # Ray's raylet starts its agents and workers; if it dies first (killed after its one second
    # of grace, under load) they would go to init and linger: adopted here, they are stopped below.
    become_subreaper()
    try:
        return _run_cluster(args, data_dir, config, stop)
    finally:
        _stop_leftovers()


def _run_cluster(args: argparse.Namespace, data_dir: Path, config: BrokerConfig, stop: threading.Event) -> int:
    from rafka.actors.ray_env import local_session_dir
    from rafka.cluster import Cluster

    started = time.monotonic()
    print(f"starting {args.brokers} broker(s), data in {data_dir}...", file=sys.stderr)
    # Detached brokers: `rafka broker` (another Ray driver) stops, kills and starts them by name.
    cluster = Cluster(data_dir, brokers=args.brokers, first_port=args.port, config=config,
                      ray_address=args.ray_address, detached=True)
    try:
        cluster.start()
    except (StartupError, KafkaError) as e:
        print(f"rafka up: {e}", file=sys.stderr)
        cluster.stop()
        return 1
    elapsed = time.monotonic() - started
    _on_stop_signals(stop)   # again: `ray.init` makes SIGTERM raise SystemExit wherever the main thread is
    write_state(data_dir, {"pid": os.getpid(), "bootstrap_servers": cluster.bootstrap_servers,
                           "brokers": {str(b.broker_id): b.address for b in cluster.brokers.values()},
                           "zookeeper_connect": cluster.zookeeper_connect, "cluster_id": cluster.cluster_id,
                           "ray_address": cluster.ray_address, "namespace": cluster.namespace,
                           # A local Ray enables token auth by itself; a command joining it must ask for it too.
                           "ray_auth_mode": os.environ.get("RAY_AUTH_MODE"),
                           # What `rafka broker start` needs to rebuild a broker's config.
                           "config": str(Path(args.config).absolute()) if args.config else None,
                           "broker_count": args.brokers, "first_port": args.port,
                           "ports": {str(b.broker_id): b.port for b in cluster.brokers.values()},
                           # What `rafka down` stops should this process be gone: ZooKeeper, Ray
                           # and the actors of the moment (pid -> start time).
                           "session_processes": {str(pid): t for pid, t in descendants(os.getpid()).items()},
                           # and the processes naming the session directory of the Ray it started.
                           "ray_session_dir": local_session_dir(),
                           "started_in_s": round(elapsed, 2)})
    print(f"rafka serving at {cluster.bootstrap_servers} (cluster {cluster.cluster_id}, up in {elapsed:.1f} s); "
          "Ctrl-C to stop", file=sys.stderr)
    print(cluster.bootstrap_servers, flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        print("stopping rafka...", file=sys.stderr)
        cluster.stop()
        if (read_state(data_dir) or {}).get("pid") == os.getpid():
            clear_state(data_dir)
        print("stopped", file=sys.stderr)
    return 0


def _on_stop_signals(stop: threading.Event) -> None:
    """SIGINT and SIGTERM set `stop`: the main loop then stops the cluster in order."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())


def _stop_leftovers() -> None:
    """Stop whatever this process started that is still running once the cluster has stopped
    (Ray's agents and workers orphaned by a raylet that died first): SIGTERM, then SIGKILL."""
    report = stop_processes(descendants(os.getpid()), grace_s=LEFTOVER_GRACE_S)
    if report.stopped or report.survivors:
        print(f"stopped {len(report.stopped)} processes left after the cluster's stop "
              f"({len(report.killed)} with SIGKILL): {' '.join(map(str, report.stopped))}", file=sys.stderr)
    if report.survivors:
        print(f"rafka up: processes {' '.join(map(str, report.survivors))} outlived SIGKILL", file=sys.stderr)
