"""CreatePartitions' decisions (pure): validate a request to grow a topic and place its new
partitions (KIP-195).

Kafka 3.9's ZooKeeper mode, in its order (`ZkAdminManager.createPartitions`,
`AdminZkClient.createNewPartitionsAssignment` and `validateReplicaAssignment`), with its
messages: live brokers with a rack and others without are refused first (RackAwareMode.
Enforced); a topic under reassignment, one that does not exist, a count that is not larger,
then an explicit assignment naming unknown brokers, with the wrong number of new partitions,
an empty or duplicated replica list, or a replication factor other than partition 0's. Without
an explicit assignment the new partitions continue the topic's round robin
(`assignment.assign_new_partitions`: the start index is the first live broker whose id is at
least partition 0's first replica, partition ids go on from the existing ones). Existing
partitions are never changed.
"""
from __future__ import annotations

from rafka.common.errors import ErrorCode, InvalidPartitionsError, KafkaError, UnknownTopicOrPartitionError
from rafka.common.metadata import ClusterMetadata
from rafka.common.types import topic_name_problem
from rafka.coordinator.controller import assignment as assign
from rafka.coordinator.controller.assignment import InvalidReplicaAssignmentError
from rafka.coordinator.messages import PartitionsSpec
from rafka.coordinator.zk.zk_data import TopicAssignment


def plan_new_partitions(spec: PartitionsSpec, existing: TopicAssignment | None,
                        brokers: assign.Brokers) -> dict[int, tuple[int, ...]]:
    """The replicas of each partition `spec` adds to `existing` (None: no such topic), over the
    live `brokers` (ids, or id -> rack); raises the KafkaError CreatePartitions answers."""
    racks = assign.enforced_broker_racks(brokers)
    topic = spec.name
    if existing is not None and (existing.adding_replicas or existing.removing_replicas):
        # Kafka refuses this to avoid racing the controller's reassignment of the same znode.
        raise KafkaError(f"A partition reassignment is in progress for the topic '{topic}'.",
                         ErrorCode.REASSIGNMENT_IN_PROGRESS)
    if existing is None or not existing.partitions or topic_name_problem(topic):
        raise UnknownTopicOrPartitionError(f"The topic '{topic}' does not exist.")
    current = len(existing.partitions)
    increment = spec.count - current
    if increment < 0:
        raise InvalidPartitionsError(
            f"Topic currently has {current} partitions, which is higher than the requested {spec.count}.")
    if increment == 0:
        raise InvalidPartitionsError(f"Topic already has {current} partitions.")
    if spec.assignments is None:
        return assign.assign_new_partitions(topic, racks, existing.partitions, spec.count)
    return _explicit(topic, spec.assignments, existing, set(racks), increment)


def _explicit(topic: str, assignments: tuple[tuple[int, ...], ...], existing: TopicAssignment,
              live: set[int], increment: int) -> dict[int, tuple[int, ...]]:
    """The client's own replica lists, numbered from the first new partition, once Kafka's
    checks pass."""
    unknown = sorted({b for replicas in assignments for b in replicas} - live)
    if unknown:
        raise InvalidReplicaAssignmentError(
            f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.")
    if len(assignments) != increment:
        raise InvalidReplicaAssignmentError(
            f"Increasing the number of partitions by {increment} but {len(assignments)} assignments provided.")
    if 0 not in existing.partitions:
        raise assign.AdminOperationError(
            f"Unexpected existing replica assignment for topic '{topic}', partition id 0 is missing. "
            f"Assignment: {dict(existing.partitions)}")
    first = len(existing.partitions)
    proposed = {first + i: tuple(replicas) for i, replicas in enumerate(assignments)}
    for partition, replicas in proposed.items():
        if not replicas:
            raise InvalidReplicaAssignmentError(f"Cannot have replication factor of 0 for partition id {partition}.")
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(
                f"Duplicate brokers not allowed in replica assignment: {', '.join(map(str, replicas))} "
                f"for partition id {partition}.")
    rf = len(existing.partitions[0])
    bad = {p: len(r) for p, r in proposed.items() if len(r) != rf}
    if bad:
        raise InvalidReplicaAssignmentError(
            f"Inconsistent replication factor between partitions, partition 0 has {rf} while partitions "
            f"[{', '.join(map(str, bad))}] have replication factors [{', '.join(map(str, bad.values()))}], "
            f"respectively.")
    return proposed


def has_partitions_with_leaders(metadata: ClusterMetadata, topic: str, count: int) -> bool:
    """True once `topic` shows partitions 0..count-1 in `metadata`, each with a leader
    (Kafka's DelayedCreatePartitions completes then)."""
    info = metadata.topics.get(topic)
    return info is not None and all(
        (p := info.partitions.get(i)) is not None and p.leader >= 0 for i in range(count))
