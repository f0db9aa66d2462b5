"""`rafka status`: say whether a detached cluster runs and where it serves."""
from __future__ import annotations

import argparse
import json
import socket

from rafka.cli.state import DEFAULT_DATA_DIR, pid_alive, read_state


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="show what runs", description=__doc__,
                       epilog="example: rafka status --output json")
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help=f"the cluster's data dir (default {DEFAULT_DATA_DIR})")
    p.add_argument("--output", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    state = read_state(args.data_dir) or {}
    running = bool(state) and pid_alive(state.get("pid", -1))
    brokers = {}
    for broker_id, address in (state.get("brokers") or {}).items():
        host, _, port = address.rpartition(":")
        brokers[broker_id] = {"address": address, "reachable": running and _reachable(host, int(port))}
    report = {"running": running, "data_dir": args.data_dir, "pid": state.get("pid") if running else None,
              "bootstrap_servers": state.get("bootstrap_servers") if running else None,
              "zookeeper_connect": state.get("zookeeper_connect") if running else None,
              "cluster_id": state.get("cluster_id") if running else None,
              "brokers": brokers if running else {}}
    if args.output == "json":
        print(json.dumps(report, indent=2))
    elif running:
        print(f"rafka is running (pid {report['pid']}), cluster {report['cluster_id']}")
        print(f"  bootstrap servers: {report['bootstrap_servers']}")
        print(f"  zookeeper: {report['zookeeper_connect']}")
        for broker_id, b in brokers.items():
            print(f"  broker {broker_id}: {b['address']} {'serving' if b['reachable'] else 'NOT reachable'}")
    else:
        print(f"rafka is not running (data dir {args.data_dir})")
    return 0 if running else 1


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False
