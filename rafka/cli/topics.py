"""`rafka topics`: list, describe, create and delete topics, like Kafka's kafka-topics.sh,
over the Kafka protocol of any broker (Metadata, CreateTopics, DeleteTopics, DescribeConfigs).

`describe` prints, per topic, its id, partition count, replication factor and config
overrides, then per partition its leader, replicas, in-sync replicas and offline replicas,
as kafka-topics.sh --describe does; `--output json` gives the same data to scripts.
"""
from __future__ import annotations

import argparse
import json
import sys

from rafka.cli.output import admin_command
from rafka.common.errors import ErrorCode
from rafka.net.client import KafkaConnection
from rafka.net.protocol import apis

METADATA, CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_CONFIGS = (
    apis.METADATA.key, apis.CREATE_TOPICS.key, apis.DELETE_TOPICS.key, apis.DESCRIBE_CONFIGS.key)
TOPIC_RESOURCE = 2
DYNAMIC_TOPIC_CONFIG = 1   # DescribeConfigs' config_source of a topic's own override


class TopicsError(Exception):
    """A refusal worth one line on stderr and exit code 1."""


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

    def delete(self, topic: str) -> None:
        answer = self._conn.request(DELETE_TOPICS, 3, {"topic_names": [topic], "timeout_ms": 60000})
        _raise_for(answer["responses"][0])


def _raise_for(result: dict) -> None:
    if result["error_code"] != ErrorCode.NONE:
        code = ErrorCode(result["error_code"])
        raise TopicsError(f"{code.name}: {result.get('error_message') or ''}".rstrip(": "))


# -- the command --------------------------------------------------------------------------------
def add_parser(sub: argparse._SubParsersAction) -> None:
    actions, common = admin_command(sub, "topics", "list, describe, create or delete topics", __doc__, [
        "rafka topics list --bootstrap-server 127.0.0.1:9092",
        "rafka topics create orders --partitions 6 --config retention.ms=86400000",
        "rafka topics describe orders --output json", "rafka topics delete orders"])
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
    x = actions.add_parser("delete", help="delete a topic and its data", parents=[common])
    x.add_argument("topic")


def run(args: argparse.Namespace) -> int:
    try:
        admin = TopicAdmin(args.bootstrap_server)
    except OSError as e:
        print(f"Error: cannot reach {args.bootstrap_server}: {e}", file=sys.stderr)
        return 1
    try:
        return {"list": _list, "describe": _describe, "create": _create, "delete": _delete}[args.action](admin, args)
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


def _delete(admin: TopicAdmin, args: argparse.Namespace) -> int:
    admin.delete(args.topic)
    print(f"Deleted topic {args.topic}.")
    return 0
