"""`Admin`: topics, configs and consumer groups of a rafka (or Kafka) cluster, from Python.

`rafka.Cluster.admin` gives one. It speaks the Kafka protocol to the brokers with the requests
the `rafka topics` and `rafka groups` commands send (`rafka.cli.topics.TopicAdmin`,
`rafka.cli.groups.GroupAdmin`), so it behaves as they do and as Kafka's admin client does:
CreateTopics, DeleteTopics and CreatePartitions wait for the controller; group requests follow
the group's coordinator and retry while it loads or moves. A refusal raises the exception of
Kafka's error code from `rafka.common.errors` (`TopicAlreadyExistsError`,
`UnknownTopicOrPartitionError`, `InvalidPartitionsError`, a `KafkaError` with its `code`
otherwise). Blocking; not thread-safe.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator, Mapping

from rafka.cli.groups import GroupAdmin, GroupsError, PartitionLag, parse_consumer_assignment
from rafka.cli.topics import TopicAdmin, TopicsError
from rafka.common.errors import ErrorCode, error_for
from rafka.common.metadata import PartitionInfo, TopicInfo
from rafka.common.types import TopicPartition
from rafka.net.protocol import apis

TOPIC_RESOURCE = 2
SET, DELETE = 0, 1   # IncrementalAlterConfigs' config_operation


@dataclass(frozen=True)
class GroupMember:
    member_id: str
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class GroupDescription:
    group: str
    state: str              # Kafka's: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead
    protocol_type: str
    protocol: str
    members: tuple[GroupMember, ...]


@dataclass(frozen=True)
class GroupListing:
    group: str
    protocol_type: str
    state: str


class Admin:
    """Admin requests to the cluster at `bootstrap_servers` (see the module's docstring)."""

    def __init__(self, bootstrap_servers: str) -> None:
        self._open(bootstrap_servers)

    def _open(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = bootstrap_servers
        self._topics = TopicAdmin(bootstrap_servers)
        self._groups = GroupAdmin(bootstrap_servers.split(",")[0])

    def close(self) -> None:
        self._topics.close()
        self._groups.close()

    def reconnect(self, bootstrap_servers: str) -> None:
        """Talk to the cluster through `bootstrap_servers` from now on (its brokers changed)."""
        self.close()
        self._open(bootstrap_servers)

    def __enter__(self) -> "Admin":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- topics ------------------------------------------------------------------------------------
    def list_topics(self) -> list[str]:
        """Every topic's name, internal ones (`__consumer_offsets`) included, sorted."""
        return sorted(t["name"] for t in self._topics.metadata(None)["topics"] if t["error_code"] == ErrorCode.NONE)

    def create_topic(self, topic: str, partitions: int = -1, replication_factor: int = -1,
                     config: Mapping[str, object] | None = None) -> None:
        """Create `topic` (-1: the broker's num.partitions and default.replication.factor) with
        topic configs by Kafka's names (`{"retention.ms": 86400000}`); returns once it has leaders."""
        with _kafka_errors():
            self._topics.create(topic, partitions, replication_factor, {k: str(v) for k, v in (config or {}).items()})

    def delete_topic(self, topic: str) -> None:
        with _kafka_errors():
            self._topics.delete(topic)

    def add_partitions(self, topic: str, count: int) -> None:
        """Grow `topic` to `count` partitions (CreatePartitions: they never shrink), placed by the controller."""
        with _kafka_errors():
            self._topics.add_partitions(topic, count, None)

    def describe_topics(self, topics: list[str] | None = None) -> list[TopicInfo]:
        """Each topic (sorted by name) with its partitions' leader, leader epoch, replicas, ISR
        and offline replicas, every topic by default; UnknownTopicOrPartitionError when one asked
        for does not exist."""
        metadata = self._topics.metadata(topics)
        for t in metadata["topics"]:
            if t["error_code"] != ErrorCode.NONE:
                raise error_for(t["error_code"], f"{ErrorCode(t['error_code']).name}: {t['name']}")
        return [TopicInfo(t["name"], t["topic_id"], {p["partition_index"]: PartitionInfo(
            p["partition_index"], p["leader_id"], p["leader_epoch"], tuple(p["replica_nodes"]), tuple(p["isr_nodes"]),
            tuple(p["offline_replicas"])) for p in sorted(t["partitions"], key=lambda p: p["partition_index"])},
            t["is_internal"]) for t in sorted(metadata["topics"], key=lambda t: t["name"])]

    def describe_configs(self, topic: str) -> dict[str, str]:
        """`topic`'s own config overrides (what `rafka topics describe` lists as Configs)."""
        with _kafka_errors():
            return self._topics.overrides([topic]).get(topic, {})

    def alter_configs(self, topic: str, configs: Mapping[str, object | None]) -> None:
        """Set `topic`'s configs (IncrementalAlterConfigs); a value of None removes the
        override, back to the broker's default."""
        answer = self._topics._conn.request(apis.INCREMENTAL_ALTER_CONFIGS.key, 0, {"validate_only": False, "resources": [{
            "resource_type": TOPIC_RESOURCE, "resource_name": topic, "configs": [
                {"name": k, "config_operation": DELETE if v is None else SET, "value": None if v is None else str(v)}
                for k, v in configs.items()]}]})
        result = answer["responses"][0]
        if result["error_code"] != ErrorCode.NONE:
            raise error_for(result["error_code"], result["error_message"] or "")

    # -- consumer groups -----------------------------------------------------------------------------
    def list_groups(self) -> list[GroupListing]:
        """Every group of every broker."""
        with _kafka_errors():
            return [GroupListing(g["group"], g["protocol_type"], g["state"]) for g in self._groups.list_groups()]

    def describe_group(self, group: str) -> GroupDescription:
        """The group's state, protocol and members with their assigned partitions."""
        with _kafka_errors():
            g = self._groups.describe(group)
        members = tuple(GroupMember(m["member_id"], m["client_id"], m["client_host"], tuple(
            TopicPartition(topic, p) for topic, parts in sorted(parse_consumer_assignment(
                bytes(m["member_assignment"] or b"")).items()) for p in parts)
            if g["protocol_type"] == "consumer" else ()) for m in g["members"])
        return GroupDescription(g["group_id"], g["group_state"], g["protocol_type"], g["protocol_data"], members)

    def list_group_offsets(self, group: str) -> dict[TopicPartition, int]:
        """The group's committed offsets."""
        with _kafka_errors():
            return {TopicPartition(t, p): offset for (t, p), offset in sorted(self._groups.committed(group).items())
                    if offset >= 0}

    def group_lag(self, group: str) -> list[PartitionLag]:
        """Per partition the group has offsets for or is assigned: committed offset, log end and
        lag, with the member that owns it (`rafka groups describe`)."""
        with _kafka_errors():
            return self._groups.lag(group)[1]

    def delete_group(self, group: str) -> None:
        """Delete an inactive group and its offsets; NonEmptyGroupError while it has members."""
        with _kafka_errors():
            code = self._groups.delete(group)
        if code != ErrorCode.NONE:
            raise error_for(code, f"{code.name}: {group}")


@contextlib.contextmanager
def _kafka_errors() -> Iterator[None]:
    """The admin commands' refusals as the exceptions of their Kafka error codes."""
    try:
        yield
    except (TopicsError, GroupsError) as e:
        raise error_for(e.code, str(e)) from None
