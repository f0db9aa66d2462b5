"""`rafka log-dirs`: the log dirs of each broker, and moving a replica between the log dirs of
its broker, over DescribeLogDirs and AlterReplicaLogDirs.

`describe` is Kafka's `kafka-log-dirs.sh --describe`: per broker and log dir its error, the
space of its volume, and per partition the size of its log, its offset lag and whether it is
a future log (a move under way); `--output json` prints kafka-log-dirs.sh's JSON (version 1)
with `totalBytes`/`usableBytes` added per log dir. `move TOPIC:PARTITION DIR` moves a
broker's replica (`--broker`, default: the partition's leader) to another of its log dirs,
online, as `kafka-reassign-partitions.sh` does for a `log_dirs` entry; `--wait` returns once
the log is in DIR and no future log is left. Exit 0 when done, 1 when a broker refused
(the Kafka error is printed) or could not be reached, 2 on bad usage.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from rafka.cli.output import admin_command, print_table
from rafka.common.errors import ErrorCode
from rafka.net.client import KafkaConnection
from rafka.net.protocol import apis

DESCRIBE_LOG_DIRS, ALTER_REPLICA_LOG_DIRS, METADATA = (
    apis.DESCRIBE_LOG_DIRS.key, apis.ALTER_REPLICA_LOG_DIRS.key, apis.METADATA.key)
DESCRIBE_VERSION, ALTER_VERSION = apis.DESCRIBE_LOG_DIRS.versions[1], apis.ALTER_REPLICA_LOG_DIRS.versions[1]


class LogDirsError(Exception):
    """A refusal to report, with exit code 1."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    actions, common = admin_command(sub, "log-dirs", "describe log dirs, move replicas between them", __doc__, [
        "rafka log-dirs describe --bootstrap-server 127.0.0.1:9092",
        "rafka log-dirs describe --topic-list orders,payments --output json",
        "rafka log-dirs move orders:0 /data/disk2/kafka-logs --broker 0 --wait"])
    d = actions.add_parser("describe", parents=[common], help="log dirs of each broker, with their partitions",
                           epilog="example: rafka log-dirs describe --topic-list orders --broker-list 0,1")
    d.add_argument("--topic-list", "--topics", dest="topics", help="comma-separated topics (default: all)")
    d.add_argument("--broker-list", dest="brokers", help="comma-separated broker ids (default: all)")
    m = actions.add_parser("move", parents=[common], help="move a replica to another log dir of its broker",
                           epilog="example: rafka log-dirs move orders:0 /data/disk2/kafka-logs --wait")
    m.add_argument("partition", metavar="TOPIC:PARTITION")
    m.add_argument("log_dir", metavar="DIR", help="the destination: one of the broker's log.dirs, absolute")
    m.add_argument("--broker", type=int, help="the broker whose replica moves (default: the partition's leader)")
    m.add_argument("--wait", action="store_true", help="return once the move is done")
    m.add_argument("--timeout-s", type=float, default=300.0, help="how long --wait waits (default 300)")


def run(args: argparse.Namespace) -> int:
    try:
        if args.action == "describe":
            return _describe(args)
        return _move(args)
    except LogDirsError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"Error: cannot reach a broker: {e}", file=sys.stderr)
        return 1


# -- describe -----------------------------------------------------------------------------
def _metadata(bootstrap: str, topics: list[str] | None) -> dict:
    with KafkaConnection.to(bootstrap) as conn:
        return conn.request(METADATA, 12, {"topics": None if topics is None else [
            {"topic_id": None, "name": t} for t in topics], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False})


def _describe_broker(address: str, topics: list[dict] | None) -> dict:
    with KafkaConnection.to(address) as conn:
        return conn.request(DESCRIBE_LOG_DIRS, DESCRIBE_VERSION, {"topics": topics})


def log_dirs_json(answers: dict[int, dict]) -> dict[str, Any]:
    """DescribeLogDirs answers (broker id -> body) as kafka-log-dirs.sh prints them, plus each
    log dir's volume space; topics listed without partitions (Kafka's answer does that) are left out."""
    brokers = []
    for broker, body in sorted(answers.items()):
        dirs = []
        for r in body["results"]:
            error = None if r["error_code"] == ErrorCode.NONE else ErrorCode(r["error_code"]).name
            dirs.append({"logDir": r["log_dir"], "error": error,
                         "totalBytes": r.get("total_bytes", -1), "usableBytes": r.get("usable_bytes", -1),
                         "partitions": [{"partition": f"{t['name']}-{p['partition_index']}",
                                         "size": p["partition_size"], "offsetLag": p["offset_lag"],
                                         "isFuture": p["is_future_key"]}
                                        for t in r["topics"] for p in t["partitions"]]})
        brokers.append({"broker": broker, "logDirs": dirs})
    return {"version": 1, "brokers": brokers}


def _describe(args: argparse.Namespace) -> int:
    topics = [t for t in (args.topics or "").split(",") if t] or None
    metadata = _metadata(args.bootstrap_server, topics)
    addresses = {b["node_id"]: f"{b['host']}:{b['port']}" for b in metadata["brokers"]}
    wanted = sorted(addresses) if not args.brokers else [int(b) for b in args.brokers.split(",") if b]
    missing = [b for b in wanted if b not in addresses]
    if missing:
        raise LogDirsError(f"no such broker: {', '.join(map(str, missing))}")
    named = None if topics is None else [
        {"topic": t["name"], "partitions": sorted(p["partition_index"] for p in t["partitions"])}
        for t in metadata["topics"] if t["error_code"] == ErrorCode.NONE]
    print(f"Querying brokers for log directories information", file=sys.stderr)
    report = log_dirs_json({b: _describe_broker(addresses[b], named) for b in wanted})
    if args.output == "json":
        print(json.dumps(report, indent=2))
    else:
        rows = [[b["broker"], d["logDir"], d["error"] or "", p["partition"], p["size"], p["offsetLag"],
                 "yes" if p["isFuture"] else ""]
                for b in report["brokers"] for d in b["logDirs"] for p in d["partitions"] or [{
                    "partition": "-", "size": "", "offsetLag": "", "isFuture": False}]]
        print_table(["BROKER", "LOG-DIR", "ERROR", "PARTITION", "SIZE", "OFFSET-LAG", "FUTURE"], rows)
        for b in report["brokers"]:
            for d in b["logDirs"]:
                print(f"broker {b['broker']} {d['logDir']}: {d['usableBytes']} of {d['totalBytes']} bytes usable",
                      file=sys.stderr)
    failed = [d for b in report["brokers"] for d in b["logDirs"] if d["error"]]
    return 1 if failed else 0


# -- move ---------------------------------------------------------------------------------
def parse_partition(text: str) -> tuple[str, int]:
    """`TOPIC:PARTITION` (as Kafka's tools spell a replica's partition); ValueError otherwise."""
    topic, sep, partition = text.rpartition(":")
    if not sep or not topic or not partition.isdigit():
        raise ValueError(f"not TOPIC:PARTITION: {text!r}")
    return topic, int(partition)


def placement(answer: dict, topic: str, partition: int) -> dict[str, list[bool]]:
    """From one broker's DescribeLogDirs answer: log dir -> is_future of each log of the partition there."""
    found: dict[str, list[bool]] = {}
    for r in answer["results"]:
        for t in r["topics"]:
            for p in t["partitions"]:
                if t["name"] == topic and p["partition_index"] == partition:
                    found.setdefault(r["log_dir"], []).append(p["is_future_key"])
    return found


def _move(args: argparse.Namespace) -> int:
    try:
        topic, partition = parse_partition(args.partition)
    except ValueError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 2
    metadata = _metadata(args.bootstrap_server, [topic])
    info = next((p for t in metadata["topics"] if t["name"] == topic and t["error_code"] == ErrorCode.NONE
                 for p in t["partitions"] if p["partition_index"] == partition), None)
    if info is None:
        raise LogDirsError(f"no such topic or partition: {topic}-{partition}")
    broker = args.broker if args.broker is not None else info["leader_id"]
    addresses = {b["node_id"]: f"{b['host']}:{b['port']}" for b in metadata["brokers"]}
    if broker not in addresses:
        raise LogDirsError(f"broker {broker} is not live" if broker >= 0 else f"{topic}-{partition} has no leader")
    with KafkaConnection.to(addresses[broker]) as conn:
        answer = conn.request(ALTER_REPLICA_LOG_DIRS, ALTER_VERSION, {"dirs": [
            {"path": args.log_dir, "topics": [{"name": topic, "partitions": [partition]}]}]})
    code = ErrorCode(answer["results"][0]["partitions"][0]["error_code"])
    result = {"topic": topic, "partition": partition, "broker": broker, "log_dir": args.log_dir, "error": code.name}
    if code is not ErrorCode.NONE:
        _print_move(args, result)
        return 1
    if args.wait:
        print(f"moving {topic}-{partition} of broker {broker} to {args.log_dir}...", file=sys.stderr)
        deadline = time.monotonic() + args.timeout_s
        request = [{"topic": topic, "partitions": [partition]}]
        while placement(_describe_broker(addresses[broker], request), topic, partition) != {args.log_dir: [False]}:
            if time.monotonic() > deadline:
                result["error"] = "TIMED_OUT"
                _print_move(args, result)
                return 1
            time.sleep(0.2)
        result["done"] = True
    _print_move(args, result)
    return 0


def _print_move(args: argparse.Namespace, result: dict) -> None:
    if args.output == "json":
        print(json.dumps(result))
    elif result["error"] == "NONE":
        state = "moved" if result.get("done") else "moving"
        print(f"{state} {result['topic']}-{result['partition']} of broker {result['broker']} to {result['log_dir']}")
    else:
        print(f"Error moving {result['topic']}-{result['partition']} of broker {result['broker']} to "
              f"{result['log_dir']}: {result['error']}")
