"""`rafka status`: say whether a detached cluster runs, where it serves, and what each broker
reports of itself (controller, replicas, the memory of its processes, replicas that are
offline and why)."""
from __future__ import annotations

import argparse
import json
import socket
import sys

from rafka.cli.state import DEFAULT_DATA_DIR, joined_ray, pid_alive, read_state
from rafka.common.process_memory import MIB


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
    if running and state.get("ray_address"):
        for broker_id, report in _ask_brokers(state, [int(b) for b in brokers]).items():
            brokers[str(broker_id)].update(report)
    report = {"running": running, "data_dir": args.data_dir, "pid": state.get("pid") if running else None,
              "bootstrap_servers": state.get("bootstrap_servers") if running else None,
              "zookeeper_connect": state.get("zookeeper_connect") if running else None,
              "cluster_id": state.get("cluster_id") if running else None,
              "brokers": brokers if running else {}}
    if args.output == "json":
        print(json.dumps(report, indent=2))
    elif running:
        _print_text(report)
    else:
        print(f"rafka is not running (data dir {args.data_dir})")
    return 0 if running else 1


def _print_text(report: dict) -> None:
    print(f"rafka is running (pid {report['pid']}), cluster {report['cluster_id']}")
    print(f"  bootstrap servers: {report['bootstrap_servers']}")
    print(f"  zookeeper: {report['zookeeper_connect']}")
    for broker_id, b in report["brokers"].items():
        role = " (controller)" if b.get("controller") else ""
        rack = f" (rack {b['rack']})" if b.get("rack") else ""
        print(f"  broker {broker_id}{role}{rack}: {b['address']} {'serving' if b['reachable'] else 'NOT reachable'}"
              + (f", {len(b['replicas'])} replicas running, {b.get('dormant_replicas', 0)} dormant, "
                 f"{b.get('spare_replica_processes', 0)} spare processes, leader of {b.get('leaders', 0)}"
                 if "replicas" in b else ""))
        if "error" in b:
            print(f"    no answer from the broker: {b['error']}")
        pids = b.get("pids") or {}
        if pids and "error" not in pids:
            services = ", ".join(f"{name} {pid}" for name, pid in pids.items() if not name.startswith("replica:"))
            replicas = sum(1 for name in pids if name.startswith("replica:"))
            print(f"    processes: {services}, {replicas} replicas (their pids: --output json)")
        if b.get("pss_bytes"):
            live = b.get("live_replicas", 0)
            each = f", {b['replica_pss_bytes'] / live / MIB:.0f} MiB per replica" if live else ""
            print(f"    memory (PSS): {b['pss_bytes'] / MIB:.0f} MiB: services {b['service_pss_bytes'] / MIB:.0f} MiB, "
                  f"{live} live replicas {b['replica_pss_bytes'] / MIB:.0f} MiB{each}, "
                  f"{b.get('dormant_replicas', 0)} dormant replicas (no process)")
        if b.get("under_replicated_partitions"):
            print(f"    under-replicated (led here, ISR short): {', '.join(b['under_replicated_partitions'])}")
        if b.get("offline_partitions"):
            print(f"    OFFLINE partitions (no leader): {', '.join(b['offline_partitions'])}")
        for log_dir, reason in (b.get("offline_log_dirs") or {}).items():
            print(f"    OFFLINE log dir {log_dir} (writes refused, reads served): {reason}")
        for o in b.get("offline_replicas", []):
            print(f"    OFFLINE {o['partition']}: {o['error']} (failed {o['failures']} times; "
                  f"next try in {o['retry_in_ms'] / 1000:.1f} s)")


def _ask_brokers(state: dict, broker_ids: list[int]) -> dict[int, dict]:
    """Join the cluster's Ray and ask every broker's coordinator for its status."""
    print("asking the brokers...", file=sys.stderr)
    try:
        with joined_ray(state) as namespace:
            from rafka.cluster import broker_status

            return broker_status(namespace, broker_ids)
    except Exception as e:  # noqa: BLE001 - the cluster may be going down
        return {b: {"error": f"cannot join the cluster's Ray at {state['ray_address']}: {e}"} for b in broker_ids}


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False
