"""`rafka down`: stop a cluster started with `rafka up --detach`, and every process it started.

The `rafka up` process stops its brokers cleanly, then Ray and ZooKeeper, then whatever it
started that still runs. Should it not be done within --timeout, its process group is killed
(SIGKILL). Either way, every process that was part of the cluster (the `up` process's tree,
followed while it stops, and the processes it recorded at start) and still runs afterwards
gets SIGTERM, then SIGKILL: Ray's agents and workers are never left behind, whatever state the
brokers were in, and also when the `up` process itself died earlier. Exit 0 when everything
stopped cleanly; 1 when nothing was running, when the stop was not clean (the `up` process
was already gone, or was killed after --timeout), or when a process outlived SIGKILL; 2 on
bad usage. `--output json` prints one object: stopped, clean, pid, and the pids of the
processes left running that it stopped (leftovers; killed: those that needed SIGKILL) or
could not stop (survivors).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

from rafka.cli.state import DEFAULT_DATA_DIR, clear_state, pid_alive, read_state
from rafka.common.process_tree import Processes, descendants, naming, running, start_time, stop_processes

LEFTOVER_GRACE_S = 5.0   # SIGTERM to SIGKILL, for a process left after the `up` process is gone
TREE_REFRESH_S = 1.0     # how often the `up` process's tree is read again while it stops


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("down", help="stop a detached rafka cluster", description=__doc__,
                       epilog="examples:\n  rafka down --data-dir /tmp/rafka\n  rafka down --output json",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help=f"the cluster's data dir (default {DEFAULT_DATA_DIR})")
    p.add_argument("--timeout", type=float, default=60, help="seconds to wait for a clean stop (default 60)")
    p.add_argument("--output", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    state = read_state(args.data_dir) or {}
    pid = state.get("pid") or 0
    driver_alive = pid > 0 and pid_alive(pid)
    tracked = {int(p): t for p, t in (state.get("session_processes") or {}).items()}
    if not driver_alive and not running(tracked):
        clear_state(args.data_dir)
        return _finish(args, {"stopped": False, "error": f"nothing is running from {args.data_dir}"})
    if driver_alive:
        print(f"stopping rafka (pid {pid})...", file=sys.stderr)
        clean = _stop_driver(pid, args.timeout, tracked)
    else:
        print(f"rafka's process (pid {pid}) is gone; stopping what it left running...", file=sys.stderr)
        clean = False
    if state.get("ray_session_dir"):   # e.g. a worker the raylet started in its last moment, before a crash
        tracked.update(naming(state["ray_session_dir"], _ray_programs()))
    leftovers = stop_processes(running(tracked), grace_s=LEFTOVER_GRACE_S)
    clear_state(args.data_dir)
    if leftovers.stopped:
        print(f"stopped {len(leftovers.stopped)} processes the cluster left running "
              f"({len(leftovers.killed)} with SIGKILL): {' '.join(map(str, leftovers.stopped))}", file=sys.stderr)
    return _finish(args, {"stopped": not leftovers.survivors, "clean": clean, "pid": pid,
                          "leftovers": leftovers.stopped, "killed": leftovers.killed,
                          "survivors": leftovers.survivors})


def _ray_programs() -> tuple[str, ...]:
    """The executables a Ray session of this installation runs: this Python (its workers,
    agents and monitors) and Ray's own binaries (GCS server, raylet), found without importing Ray."""
    import importlib.util

    spec = importlib.util.find_spec("ray")
    programs = [os.path.realpath(sys.executable)]
    if spec and spec.origin:
        programs.append(os.path.realpath(os.path.dirname(spec.origin)) + os.sep)
    return tuple(programs)


def _stop_driver(pid: int, timeout_s: float, tracked: Processes) -> bool:
    """SIGTERM the `up` process and wait for it, adding its process tree to `tracked` as it
    goes (it adopts what Ray's raylet leaves, so its tree is the whole cluster until it exits);
    past `timeout_s`, SIGKILL its process group. True when it stopped by itself in time."""
    started = start_time(pid)
    tracked.update(descendants(pid))
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    refreshed = time.monotonic()
    while pid_alive(pid) and start_time(pid) == started:
        if time.monotonic() > deadline:
            print(f"rafka down: pid {pid} did not stop in {timeout_s:.0f} s; killing its process group",
                  file=sys.stderr)
            tracked.update(descendants(pid))
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return False
        if time.monotonic() - refreshed >= TREE_REFRESH_S:
            tracked.update(descendants(pid))
            refreshed = time.monotonic()
        time.sleep(0.2)
    return True


def _finish(args: argparse.Namespace, result: dict) -> int:
    """Print the outcome (one JSON object with --output json) and return the exit code: 0 only
    for a clean stop that left nothing running."""
    if args.output == "json":
        print(json.dumps(result, indent=2))
    if "error" in result:
        print(f"rafka down: {result['error']}", file=sys.stderr)
    elif result["survivors"]:
        print(f"rafka down: processes {' '.join(map(str, result['survivors']))} outlived SIGKILL", file=sys.stderr)
    elif not result["clean"]:
        print("stopped, but not cleanly: the brokers may not have flushed and closed their logs", file=sys.stderr)
    else:
        print("stopped", file=sys.stderr)
    return 0 if result["stopped"] and result.get("clean") else 1
