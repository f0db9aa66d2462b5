"""Actor names: one tested format/parse pair, so a restarted coordinator finds live actors.

Every rafka actor lives in the Ray namespace of its cluster (`rafka` by default) under a
name that says what it is and which broker owns it:

    cluster                         the cluster's registry (`rafka.Cluster`: how another driver finds it)
    coordinator:<broker>            BrokerCoordinator of a broker
    frontend:<broker>               the Kafka-protocol front end of a broker
    replica:<broker>:<topic>-<p>    one partition replica hosted by a broker
"""
from __future__ import annotations

from dataclasses import dataclass

from rafka.common.types import TopicPartition

DEFAULT_NAMESPACE = "rafka"
CLUSTER_REGISTRY_NAME = "cluster"


def coordinator_name(broker_id: int) -> str:
    return f"coordinator:{broker_id}"


def frontend_name(broker_id: int) -> str:
    return f"frontend:{broker_id}"


def replica_name(broker_id: int, tp: TopicPartition) -> str:
    return f"replica:{broker_id}:{tp}"


@dataclass(frozen=True)
class ActorName:
    kind: str
    broker_id: int
    tp: TopicPartition | None = None


def parse_actor_name(name: str) -> ActorName:
    """Inverse of the `*_name` functions; ValueError for a name rafka did not make."""
    kind, sep, rest = name.partition(":")
    if not sep:
        raise ValueError(f"not a rafka actor name: {name!r}")
    if kind in ("coordinator", "frontend"):
        if not rest.isdigit():
            raise ValueError(f"not a rafka actor name: {name!r}")
        return ActorName(kind, int(rest))
    if kind == "replica":
        broker, sep, tp = rest.partition(":")
        if not sep or not broker.isdigit():
            raise ValueError(f"not a rafka actor name: {name!r}")
        return ActorName(kind, int(broker), TopicPartition.parse(tp))
    raise ValueError(f"not a rafka actor name: {name!r}")
