"""`rafka down`: stop a cluster started with `rafka up --detach`."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from rafka.cli.state import DEFAULT_DATA_DIR, clear_state, pid_alive, read_state


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("down", help="stop a detached rafka cluster", description=__doc__,
                       epilog="example: rafka down --data-dir /tmp/rafka")
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help=f"the cluster's data dir (default {DEFAULT_DATA_DIR})")
    p.add_argument("--timeout", type=float, default=60, help="seconds to wait for a clean stop (default 60)")


def run(args: argparse.Namespace) -> int:
    state = read_state(args.data_dir)
    if not state or not pid_alive(state.get("pid", -1)):
        print(f"rafka down: nothing is running from {args.data_dir}", file=sys.stderr)
        clear_state(args.data_dir)
        return 1
    pid = state["pid"]
    print(f"stopping rafka (pid {pid})...", file=sys.stderr)
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + args.timeout
    while pid_alive(pid):
        if time.monotonic() > deadline:
            print(f"rafka down: pid {pid} did not stop in {args.timeout:.0f} s; killing its process group",
                  file=sys.stderr)
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            clear_state(args.data_dir)
            return 1
        time.sleep(0.2)
    clear_state(args.data_dir)
    print("stopped", file=sys.stderr)
    return 0
