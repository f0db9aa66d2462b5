"""`rafka broker`: take one broker of a running `rafka up` cluster down and bring it back, so
operators and fault tests can exercise failover without writing Ray code.

  stop ID          clean shutdown: replicas flushed and closed, the ZooKeeper registration
                   removed, so the controller moves leadership away at once.
  stop ID --kill   kill -9 of every process of the broker (coordinator, front end, replicas)
                   at once, as a machine losing power would; the controller learns of the
                   death from Ray. Prints the pids it killed, once each is confirmed gone (with
                   --output json, also `killed_at`: when the signals went, Unix seconds).
  start ID         the broker again, on its own data and the port it had, from the config
                   `rafka up` gave it (the run-state file keeps the --config path, the broker
                   count and every broker's port). A killed broker's ZooKeeper registration
                   is removed by the broker as it starts (its log dirs' locks name the
                   dead process's session), or else waited out (a session timeout).

The command joins the cluster's Ray as `rafka status` does, and leaves it when done. A broker
it starts is a detached Ray actor: it outlives the command, and `rafka down` stops it with the
rest of the cluster. Exit 0 when done, 1 when not (nothing running, no such broker, a broker
already stopped or already running, a process still running after kill -9, or the broker's
own reason for failing to start), 2 on bad usage. A broker that is down while Ray still holds
its actor's name a while is done (a warning says so; `start` waits for the name).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from rafka.cli.state import DEFAULT_DATA_DIR, joined_ray, pid_alive, read_state
from rafka.common.errors import KafkaError, StartupError

EXAMPLES = ["rafka broker stop 1 --kill --output json", "rafka broker start 1",
            "rafka broker stop 2 --data-dir /tmp/rafka && rafka broker start 2 --data-dir /tmp/rafka"]
NAME_RELEASE_WAIT_S = 10.0  # a detached actor's name is free within half a second of its death
STATE_KEYS = ("ray_address", "zookeeper_connect", "config", "broker_count", "first_port", "ports")


class BrokerCommandError(Exception):
    """A refusal worth one line on stderr and exit code 1."""


# -- pure: from the run-state file to the cluster `rafka up` runs --------------------------------
def running_state(data_dir: str | Path, broker_id: int) -> dict:
    """The state of the cluster running from `data_dir`, checked to hold what this command
    needs and to list `broker_id`; BrokerCommandError otherwise."""
    state = read_state(data_dir)
    if not state or not pid_alive(state.get("pid", -1)):
        raise BrokerCommandError(f"nothing is running from {data_dir}")
    missing = [k for k in STATE_KEYS if k not in state]
    if missing:
        raise BrokerCommandError(f"the run state in {data_dir} lacks {', '.join(missing)} (a cluster started "
                                 "by an older `rafka up`); restart it with `rafka down` and `rafka up`")
    if str(broker_id) not in state["ports"]:
        raise BrokerCommandError(f"no broker {broker_id} in this cluster (brokers: "
                                 f"{', '.join(sorted(state['ports'], key=int))})")
    return state


def cluster_from_state(state: dict, data_dir: str | Path) -> Any:
    """The `Cluster` that `rafka up` runs, rebuilt without starting anything: same data dir,
    namespace, broker count, first port and base config (its --config file, with the
    ZooKeeper it used), and each broker's port as it was, so `broker_config` and
    `restart_broker` give a broker what `rafka up` gave it. BrokerCommandError when the
    config file cannot be read any more."""
    from rafka.cluster import Cluster
    from rafka.common.config import BrokerConfig

    try:
        base = BrokerConfig.from_properties(state["config"]) if state["config"] else BrokerConfig()
    except (OSError, KafkaError) as e:
        raise BrokerCommandError(f"cannot read the cluster's config {state['config']}: {e}") from None
    cluster = Cluster(data_dir, brokers=state["broker_count"], first_port=state["first_port"],
                      config=base.replace(zookeeper_connect=state["zookeeper_connect"]),
                      namespace=state.get("namespace", "rafka"), ray_address=state["ray_address"], detached=True)
    cluster.ports.update({int(b): port for b, port in state["ports"].items()})
    return cluster


# -- the command ----------------------------------------------------------------------------------
def add_parser(sub: argparse._SubParsersAction) -> None:
    epilog = "examples:\n" + "\n".join(f"  {e}" for e in EXAMPLES)
    p = sub.add_parser("broker", help="stop or start one broker of a running cluster", description=__doc__,
                       epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("broker_id", type=int, metavar="ID", help="the broker's broker.id")
    common.add_argument("--data-dir", default=DEFAULT_DATA_DIR,
                        help=f"the data dir `rafka up` was given (default {DEFAULT_DATA_DIR})")
    common.add_argument("--output", choices=("text", "json"), default="text")
    stop = actions.add_parser("stop", help="stop a broker (clean, or kill -9 with --kill)", parents=[common],
                              epilog="examples:\n  rafka broker stop 1\n  rafka broker stop 1 --kill --output json",
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    stop.add_argument("--kill", action="store_true",
                      help="kill -9 of all its processes at once instead of a clean shutdown")
    start = actions.add_parser("start", help="start a stopped broker on its data and port", parents=[common],
                               epilog="example:\n  rafka broker start 1 --timeout 60",
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    start.add_argument("--timeout", type=float, default=120,
                       help="seconds to wait for the broker to serve (default 120)")


def run(args: argparse.Namespace) -> int:
    action = "kill" if args.action == "stop" and args.kill else args.action
    try:
        state = running_state(args.data_dir, args.broker_id)
        try:
            with joined_ray(state) as namespace:  # first, as it must set Ray's environment before Ray's import
                cluster = cluster_from_state(state, args.data_dir)
                result = _start(cluster, namespace, args) if action == "start" else _stop(cluster, namespace, args)
        except BrokerCommandError:
            raise
        except Exception as e:  # noqa: BLE001 - Ray gone, or a broker lost mid-way: one line, exit 1
            raise BrokerCommandError(f"{type(e).__name__}: {e}") from None
    except BrokerCommandError as e:
        print(f"rafka broker {args.action}: {e}", file=sys.stderr)
        if args.output == "json":
            print(json.dumps({"broker_id": args.broker_id, "action": action, "ok": False, "error": str(e)}, indent=2))
        return 1
    if args.output == "json":
        print(json.dumps({"broker_id": args.broker_id, "action": action, "ok": True, **result}, indent=2))
    elif action == "start":
        print(f"Started broker {args.broker_id} at {result['address']}.")
    else:
        print(f"{'Killed' if action == 'kill' else 'Stopped'} broker {args.broker_id} "
              f"({len(result['pids'])} processes: {' '.join(str(p) for p in result['pids'].values())}).")
    return 0


def _stop(cluster: Any, namespace: str, args: argparse.Namespace) -> dict:
    """Stop (or kill) the broker and wait until its name is free for a `start`. Returns the
    pids of the processes it had, by actor name."""
    from rafka.actors import ray_env
    from rafka.cluster import await_broker_released, broker_running, find_broker

    broker_id = args.broker_id
    if not broker_running(namespace, broker_id):
        raise BrokerCommandError(f"broker {broker_id} is not running")
    if args.kill:
        print(f"killing every process of broker {broker_id} (kill -9)...", file=sys.stderr)
        killed_at = time.time()
        try:
            pids = cluster.kill_broker(broker_id)
        except LookupError as e:
            raise BrokerCommandError(str(e)) from None
    else:
        pids = ray_env.ray.get(find_broker(namespace, broker_id).replica_pids.remote(), timeout=30)
        print(f"stopping broker {broker_id} ({len(pids)} processes)...", file=sys.stderr)
        cluster.stop_broker(broker_id)
    if not await_broker_released(namespace, broker_id, NAME_RELEASE_WAIT_S):
        print(f"warning: broker {broker_id} is down, but Ray still holds its name after {NAME_RELEASE_WAIT_S:.0f} s; "
              "`rafka broker start` waits for it to let go", file=sys.stderr)
    print(f"broker {broker_id} {'killed' if args.kill else 'stopped'}", file=sys.stderr)
    return {"pids": pids, "killed_at": round(killed_at, 3)} if args.kill else {"pids": pids}


def _start(cluster: Any, namespace: str, args: argparse.Namespace) -> dict:
    from rafka.cluster import await_broker_released, broker_running

    broker_id = args.broker_id
    if broker_running(namespace, broker_id):
        raise BrokerCommandError(f"broker {broker_id} is already running")
    if not await_broker_released(namespace, broker_id, NAME_RELEASE_WAIT_S):
        raise BrokerCommandError(f"broker {broker_id} is dead but Ray still holds its name (a broker not "
                                 "started detached, whose owner keeps a handle to it)")
    port = cluster.ports[broker_id]
    print(f"starting broker {broker_id} on port {port}...", file=sys.stderr)
    try:
        handle = cluster.restart_broker(broker_id, detached=True, timeout_s=args.timeout)
    except StartupError as e:
        raise BrokerCommandError(str(e)) from None
    print(f"broker {broker_id} serving at {handle.address}", file=sys.stderr)
    return {"address": handle.address}
