"""`rafka topics`: list, describe, create, alter and delete topics, like Kafka's kafka-topics.sh,
over the Kafka protocol of any broker (Metadata, CreateTopics, CreatePartitions, DeleteTopics,
DescribeConfigs).

`describe` prints, per topic, its id, partition count, replication factor and config
overrides, then per partition its leader, replicas, in-sync replicas and offline replicas,
as kafka-topics.sh --describe does; `--output json` gives the same data to scripts. `alter
TOPIC --partitions N` adds partitions (kafka-topics.sh --alter --partitions), placed by the
broker or by `--replica-assignment` in Kafka's form: one `broker:broker` list per partition,
existing ones first (they are skipped, as kafka-topics.sh skips them).
"""
from __future__ import annotations

import argparse
import json
import sys

from rafka.cli.output import admin_command
from rafka.common.errors import ErrorCode
from rafka.net.client import KafkaConnection
from rafka.net.protocol import apis

METADATA, CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_CONFIGS, CREATE_PARTITIONS = (
    apis.METADATA.key, apis.CREATE_TOPICS.key, apis.DELETE_TOPICS.key, apis.DESCRIBE_CONFIGS.key,
    apis.CREATE_PARTITIONS.key)
TOPIC_RESOURCE = 2
DYNAMIC_TOPIC_CONFIG = 1   # DescribeConfigs' config_source of a topic's own override


class TopicsError(Exception):
    """A refusal worth one line on stderr and exit code 1; `code` is Kafka's error, where one was answered."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR) -> None:
        super().__init__(message)
        self.code = code


# -- pure: the data each action prints ----------------------------------------------------------
def describe_topics(metadata: dict, overrides: dict[str, dict[str, str]]) -> list[dict]:
    """Topics of a Metadata response (internal ones included) with their partitions, sorted."""
    out = []
    for t in sorted(metadata["topics"], key=lambda t: t["name"]):
        if t["error_code"] != ErrorCode.NONE:
            continue
        partitions = [{"partition": p["partition_index"], "leader": p["leader_id"],
                       "leader_epoch": p["leader_epoch"], "replicas": p["replica_nodes"], "isr": p["isr_nodes"],
                       "offline": p["offline_replicas"]}
                      for p in sorted(t["partitions"], key=lambda p: p["partition_index"])]
        out.append({"topic": t["name"], "topic_id": str(t["topic_id"]), "internal": t["is_internal"],
                    "partition_count": len(partitions),
                    "replication_factor": len(partitions[0]["replicas"]) if partitions else 0,
                    "configs": overrides.get(t["name"], {}), "partitions": partitions})
    return out


def describe_lines(topic: dict) -> list[str]:
    """kafka-topics.sh --describe's text for one topic."""
    configs = ",".join(f"{k}={v}" for k, v in sorted(topic["configs"].items()))
    lines = [f"Topic: {topic['topic']}\tTopicId: {topic['topic_id']}\tPartitionCount: {topic['partition_count']}\t"
             f"ReplicationFactor: {topic['replication_factor']}\tConfigs: {configs}"]
    for p in topic["partitions"]:
        line = (f"\tTopic: {topic['topic']}\tPartition: {p['partition']}\tLeader: "
                f"{p['leader'] if p['leader'] >= 0 else 'none'}\tReplicas: {_ids(p['replicas'])}\tIsr: {_ids(p['isr'])}")
        if p["offline"]:
            line += f"\tOffline: {_ids(p['offline'])}"
        lines.append(line)
    return lines


def _ids(ids: list[int]) -> str:
    return ",".join(str(i) for i in ids)


def parse_configs(pairs: list[str]) -> dict[str, str]:
    """`--config k=v` pairs; ValueError names a pair without `=`."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--config {pair!r} is not KEY=VALUE")
        out[key] = value
    return out


def parse_replica_assignment(text: str) -> list[list[int]]:
    """kafka-topics.sh's `--replica-assignment` ("0:1,1:2,2:0"): one replica list per partition
    from partition 0; ValueError for a list with a broker twice or a replication factor other
    than the first partition's (Kafka's own checks, with its messages)."""
    out: list[list[int]] = []
    for i, part in enumerate(text.split(",")):
        try:
            brokers = [int(b.strip()) for b in part.split(":")]
        except ValueError:
            raise ValueError(f"--replica-assignment {text!r}: {part!r} is not a list of broker ids") from None
        twice = sorted({b for b in brokers if brokers.count(b) > 1})
        if twice:
            raise ValueError("Partition replica lists may not contain duplicate entries: "
                             + ",".join(map(str, twice)))
        if out and len(brokers) != len(out[0]):
            raise ValueError(f"Partition {i} has different replication factor: {brokers}")
        out.append(brokers)
    return out


# -- the protocol side --------------------------------------------------------------------------
class TopicAdmin:
    def __init__(self, bootstrap_server: str) -> None:
        self._conn = KafkaConnection.to(bootstrap_server.split(",")[0])

    def close(self) -> None:
        self._conn.close()

    def metadata(self, topics: list[str] | None) -> dict:
        return self._conn.request(METADATA, 12, {
            "topics": None if topics is None else [{"topic_id": None, "name": t} for t in topics],
            "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})

    def overrides(self, topics: list[str]) -> dict[str, dict[str, str]]:
        if not topics:
            return {}
        answer = self._conn.request(DESCRIBE_CONFIGS, 1, {"include_synonyms": False, "resources": [
            {"resource_type": TOPIC_RESOURCE, "resource_name": t, "configuration_keys": None} for t in topics]})
        return {r["resource_name"]: {c["name"]: c["value"] for c in r["configs"]
                                     if c["config_source"] == DYNAMIC_TOPIC_CONFIG}
                for r in answer["results"] if r["error_code"] == ErrorCode.NONE}

    def create(self, topic: str, partitions: int, replication_factor: int, configs: dict[str, str]) -> None:
        answer = self._conn.request(CREATE_TOPICS, 4, {"timeout_ms": 60000, "validate_only": False, "topics": [{
            "name": topic, "num_partitions": partitions, "replication_factor": replication_factor,
            "assignments": [], "configs": [{"name": k, "value": v} for k, v in configs.items()]}]})
        _raise_for(answer["topics"][0])

    def partition_count(self, topic: str) -> int:
        """How many partitions `topic` has now; TopicsError when it does not exist."""
        answer = self.metadata([topic])["topics"][0]
        if answer["error_code"] != ErrorCode.NONE:
            raise TopicsError(f"{ErrorCode(answer['error_code']).name}: no such topic: {topic}",
                              ErrorCode(answer["error_code"]))
        return len(answer["partitions"])

    def add_partitions(self, topic: str, count: int, assignments: list[list[int]] | None) -> None:
        """CreatePartitions v3: grow `topic` to `count` partitions, waiting until they have leaders."""
        answer = self._conn.request(CREATE_PARTITIONS, 3, {"timeout_ms": 60000, "validate_only": False, "topics": [{
            "name": topic, "count": count,
            "assignments": None if assignments is None else [{"broker_ids": a} for a in assignments]}]})
        _raise_for(answer["results"][0])

    def delete(self, topic: str) -> None:
        answer = self._conn.request(DELETE_TOPICS, 3, {"topic_names": [topic], "timeout_ms": 60000})
        _raise_for(answer["responses"][0])


def _raise_for(result: dict) -> None:
    if result["error_code"] != ErrorCode.NONE:
        code = ErrorCode(result["error_code"])
        raise TopicsError(f"{code.name}: {result.get('error_message') or ''}".rstrip(": "), code)


# -- the command --------------------------------------------------------------------------------
def add_parser(sub: argparse._SubParsersAction) -> None:
    actions, common = admin_command(sub, "topics", "list, describe, create or delete topics", __doc__, [
        "rafka topics list --bootstrap-server 127.0.0.1:9092",
        "rafka topics create orders --partitions 6 --config retention.ms=86400000",
        "rafka topics describe orders --output json", "rafka topics alter orders --partitions 8",
        "rafka topics delete orders"])
    actions.add_parser("list", help="every topic's name", parents=[common])
    d = actions.add_parser("describe", help="partitions with leader, replicas and ISR (every topic by default)",
                           parents=[common])
    d.add_argument("topic", nargs="*")
    c = actions.add_parser("create", help="create a topic", parents=[common])
    c.add_argument("topic")
    c.add_argument("--partitions", type=int, default=-1, help="default: the broker's num.partitions")
    c.add_argument("--replication-factor", type=int, default=-1,
                   help="default: the broker's default.replication.factor")
    c.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="a topic config (repeatable)")
    a = actions.add_parser("alter", help="add partitions to a topic (their count only grows)", parents=[common],
                           formatter_class=argparse.RawDescriptionHelpFormatter, epilog="example: rafka topics alter orders --partitions 8 --replica-assignment "
                                  "0:1,1:2,2:0,0:2")
    a.add_argument("topic")
    a.add_argument("--partitions", type=int, required=True, help="the topic's new partition count")
    a.add_argument("--replica-assignment", metavar="B:B,B:B,...",
                   help="replicas of every partition, existing ones first (default: placed by the broker)")
    x = actions.add_parser("delete", help="delete a topic and its data", parents=[common])
    x.add_argument("topic")


def run(args: argparse.Namespace) -> int:
    try:
        admin = TopicAdmin(args.bootstrap_server)
    except OSError as e:
        print(f"Error: cannot reach {args.bootstrap_server}: {e}", file=sys.stderr)
        return 1
    try:
        return {"list": _list, "describe": _describe, "create": _create, "alter": _alter,
                "delete": _delete}[args.action](admin, args)
    except (TopicsError, OSError, ValueError) as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    finally:
        admin.close()


def _list(admin: TopicAdmin, args: argparse.Namespace) -> int:
    names = sorted(t["name"] for t in admin.metadata(None)["topics"] if t["error_code"] == ErrorCode.NONE)
    print(json.dumps(names, indent=2) if args.output == "json" else "\n".join(names))
    return 0


def _describe(admin: TopicAdmin, args: argparse.Namespace) -> int:
    metadata = admin.metadata(args.topic or None)
    missing = [t["name"] for t in metadata["topics"] if t["error_code"] != ErrorCode.NONE]
    topics = describe_topics(metadata, admin.overrides([t["name"] for t in metadata["topics"]
                                                        if t["error_code"] == ErrorCode.NONE]))
    if args.output == "json":
        print(json.dumps(topics, indent=2))
    else:
        for topic in topics:
            print("\n".join(describe_lines(topic)))
    if missing:
        print(f"Error: no such topic: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


def _create(admin: TopicAdmin, args: argparse.Namespace) -> int:
    admin.create(args.topic, args.partitions, args.replication_factor, parse_configs(args.config))
    print(f"Created topic {args.topic}.")
    return 0


def _alter(admin: TopicAdmin, args: argparse.Namespace) -> int:
    assignments = None
    if args.replica_assignment:
        assignments = parse_replica_assignment(args.replica_assignment)[admin.partition_count(args.topic):]
    admin.add_partitions(args.topic, args.partitions, assignments)
    if args.output == "json":
        print(json.dumps({"topic": args.topic, "partition_count": args.partitions}))
    else:
        print(f"Topic {args.topic} now has {args.partitions} partitions.")
    return 0


def _delete(admin: TopicAdmin, args: argparse.Namespace) -> int:
    admin.delete(args.topic)
    print(f"Deleted topic {args.topic}.")
    return 0
