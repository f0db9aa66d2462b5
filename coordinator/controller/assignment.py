"""Replica assignment for new topics and partitions, as Kafka's `AdminUtils` does it.

Rack-unaware placement (`assignReplicasToBrokersRackUnaware`): the first replica of
partition p goes to broker `(p + start_index) % n`, the others follow at a shift that grows
by one every n partitions, so leaders and followers both spread evenly. The random start
index and shift come from an injectable `random.Random`, or are fixed for tests.
"""
from __future__ import annotations

import random
from typing import Iterable, Mapping, Sequence

from rafka.common.errors import (ErrorCode, InvalidPartitionsError, InvalidReplicationFactorError,
                                 KafkaError)


class InvalidReplicaAssignmentError(KafkaError):
    """A manual replica assignment that Kafka would refuse (INVALID_REPLICA_ASSIGNMENT)."""

    code = ErrorCode.INVALID_REPLICA_ASSIGNMENT


def assign_replicas_to_brokers(
    num_partitions: int,
    replication_factor: int,
    broker_ids: Iterable[int],
    *,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
) -> dict[int, tuple[int, ...]]:
    """Partition -> replicas (preferred leader first) for `num_partitions` new partitions.

    `start_partition_id` numbers the first new partition (CreatePartitions adds to an existing
    topic); `fixed_start_index` >= 0 replaces both random draws, as in Kafka's tests.
    Raises InvalidPartitionsError / InvalidReplicationFactorError with Kafka's messages.
    """
    brokers = sorted(set(broker_ids))
    if num_partitions <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}.")
    rng = rng or random.Random()
    n = len(brokers)
    start_index = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    next_replica_shift = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    current = max(0, start_partition_id)
    result: dict[int, tuple[int, ...]] = {}
    for _ in range(num_partitions):
        if current > 0 and current % n == 0:
            next_replica_shift += 1
        first = (current + start_index) % n
        replicas = [brokers[first]]
        for j in range(replication_factor - 1):
            replicas.append(brokers[_replica_index(first, next_replica_shift, j, n)])
        result[current] = tuple(replicas)
        current += 1
    return result


def assign_replicas(broker_ids: Iterable[int], num_partitions: int, replication_factor: int, *,
                    rng: random.Random | None = None) -> dict[int, tuple[int, ...]]:
    """`assign_replicas_to_brokers` with the broker list first (the coordinator's call shape)."""
    return assign_replicas_to_brokers(num_partitions, replication_factor, broker_ids, rng=rng)


def _replica_index(first_replica_index: int, second_replica_shift: int, replica_index: int, n: int) -> int:
    shift = 1 + (second_replica_shift + replica_index) % (n - 1)
    return (first_replica_index + shift) % n


def validate_replica_assignment(
    assignment: Mapping[int, Sequence[int]],
    live_broker_ids: Iterable[int],
    *,
    first_partition: int = 0,
) -> dict[int, tuple[int, ...]]:
    """Check a manual assignment (CreateTopics `assignments`, CreatePartitions) and return it
    normalised. Partitions must be consecutive from `first_partition`, all of one replication
    factor, with no duplicate replica and only known brokers (Kafka's AdminZkClient checks)."""
    live = set(live_broker_ids)
    if not assignment:
        raise InvalidReplicaAssignmentError("The manual partition assignment is empty.")
    normalised = {int(p): tuple(int(r) for r in reps) for p, reps in assignment.items()}
    for p, reps in normalised.items():
        if not reps:
            raise InvalidReplicaAssignmentError(
                f"The manual partition assignment includes an empty replica list for partition {p}.")
        if len(set(reps)) != len(reps):
            raise InvalidReplicaAssignmentError(f"Duplicate replica assignment found: {normalised}")
        unknown = sorted(set(reps) - live)
        if unknown:
            raise InvalidReplicaAssignmentError(
                f"The manual partition assignment includes broker {unknown[0]}, but no such broker is registered.")
    if len({len(r) for r in normalised.values()}) != 1:
        raise InvalidReplicaAssignmentError("All partitions should have the same number of replicas")
    expected = list(range(first_partition, first_partition + len(normalised)))
    if sorted(normalised) != expected:
        raise InvalidReplicaAssignmentError(
            f"partitions should be a consecutive {first_partition}-based integer sequence")
    return dict(sorted(normalised.items()))
