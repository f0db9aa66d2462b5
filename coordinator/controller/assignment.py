"""Replica assignment for new topics and partitions, as Kafka's `AdminUtils` does it.

Rack-unaware placement (`assignReplicasToBrokersRackUnaware`): the first replica of
partition p goes to broker `(p + start_index) % n`, the others follow at a shift that grows
by one every n partitions, so leaders and followers both spread evenly. The random start
index and shift come from an injectable `random.Random`, or are fixed for tests.

Rack-aware placement (`assignReplicasToBrokersRackAware`), used when every broker has a
rack (`broker.rack`): the same round robin over a rack-alternated broker list (racks in
name order, each rack's brokers in id order, one broker of each rack in turn), so that
consecutive brokers sit on different racks; each follower then skips brokers on a rack that
already holds a replica of the partition while some rack holds none, and brokers that
already hold one while some broker holds none. A partition's replicas thus span
min(replication factor, racks) racks. Some brokers with a rack and some without is refused
(Kafka's AdminOperationException, UNKNOWN_SERVER_ERROR on the wire).
"""
from __future__ import annotations

import random
from typing import Callable, Iterable, Mapping, Sequence

from rafka.common.errors import (ErrorCode, InvalidPartitionsError, InvalidReplicationFactorError,
                                 KafkaError)

# A broker id, or broker id -> rack (None: the broker has no rack).
Brokers = Iterable[int] | Mapping[int, "str | None"]

# AdminUtils.assignReplicasToBrokers (CreateTopics, auto-creation, __consumer_offsets).
NOT_ALL_RACKS = "Not all brokers have rack information for replica rack aware assignment."
# AdminZkClient.getBrokerMetadatas(RackAwareMode.Enforced) (CreatePartitions, kafka-topics.sh).
NOT_ALL_RACKS_ENFORCED = ("Not all brokers have rack information. Add --disable-rack-aware in command line"
                          " to make replica assignment without rack information.")


class InvalidReplicaAssignmentError(KafkaError):
    """A manual replica assignment that Kafka would refuse (INVALID_REPLICA_ASSIGNMENT)."""

    code = ErrorCode.INVALID_REPLICA_ASSIGNMENT


class AdminOperationError(KafkaError):
    """Kafka's AdminOperationException: not an API error, so the client sees UNKNOWN_SERVER_ERROR."""

    code = ErrorCode.UNKNOWN_SERVER_ERROR


def broker_racks(brokers: Brokers) -> dict[int, str | None]:
    """`brokers` as broker id -> rack, in id order (a plain list of ids has no racks)."""
    racks = dict(brokers.items()) if isinstance(brokers, Mapping) else dict.fromkeys(brokers)
    return {b: racks[b] for b in sorted(racks)}


def assign_replicas_to_brokers(
    num_partitions: int,
    replication_factor: int,
    brokers: Brokers,
    *,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
) -> dict[int, tuple[int, ...]]:
    """Partition -> replicas (preferred leader first) for `num_partitions` new partitions.

    `brokers`: broker ids, or broker id -> rack; rack-aware when every broker has a rack,
    rack-unaware when none has. `start_partition_id` numbers the first new partition
    (CreatePartitions adds to an existing topic); `fixed_start_index` >= 0 replaces both
    random draws, as in Kafka's tests. Raises InvalidPartitionsError /
    InvalidReplicationFactorError / AdminOperationError with Kafka's messages.
    """
    racks = broker_racks(brokers)
    if num_partitions <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > len(racks):
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {len(racks)}.")
    with_rack = [b for b, rack in racks.items() if rack is not None]
    if with_rack and len(with_rack) < len(racks):
        raise AdminOperationError(NOT_ALL_RACKS)
    if with_rack:
        brokers_in_order = rack_alternated_broker_list(racks)
        followers = _rack_aware_followers(brokers_in_order, racks, replication_factor)
    else:
        brokers_in_order = list(racks)
        followers = _rack_unaware_followers(brokers_in_order, replication_factor)
    n = len(brokers_in_order)
    if fixed_start_index >= 0:
        start_index = next_replica_shift = fixed_start_index
    else:  # Kafka's two draws: the first replica's start index, then the followers' shift
        rng = rng or random.Random()
        start_index, next_replica_shift = rng.randrange(n), rng.randrange(n)
    result: dict[int, tuple[int, ...]] = {}
    for current in range(max(0, start_partition_id), max(0, start_partition_id) + num_partitions):
        if current > 0 and current % n == 0:
            next_replica_shift += 1
        first = (current + start_index) % n
        result[current] = (brokers_in_order[first], *followers(first, next_replica_shift))
    return result


def _rack_unaware_followers(brokers: list[int], replication_factor: int) -> Callable[[int, int], list[int]]:
    """The followers of the partition led by `brokers[first]`: each at the next shift."""
    n = len(brokers)

    def followers(first: int, shift: int) -> list[int]:
        return [brokers[_replica_index(first, shift, j, n)] for j in range(replication_factor - 1)]
    return followers


def _rack_aware_followers(arranged: list[int], racks: Mapping[int, str | None],
                          replication_factor: int) -> Callable[[int, int], list[int]]:
    """The followers of the partition led by `arranged[first]`, walking the rack-alternated
    list from the shift (times the racks, as Kafka) and skipping a broker on a rack that has
    a replica while some rack has none, and a broker that has one while some broker has none."""
    n, num_racks = len(arranged), len(set(racks.values()))

    def followers(first: int, shift: int) -> list[int]:
        leader = arranged[first]
        chosen: list[int] = []
        racks_with_replicas, brokers_with_replicas = {racks[leader]}, {leader}
        k = 0
        while len(chosen) < replication_factor - 1:
            broker = arranged[_replica_index(first, shift * num_racks, k, n)]
            rack = racks[broker]
            k += 1
            if (rack not in racks_with_replicas or len(racks_with_replicas) == num_racks) and \
                    (broker not in brokers_with_replicas or len(brokers_with_replicas) == n):
                chosen.append(broker)
                racks_with_replicas.add(rack)
                brokers_with_replicas.add(broker)
        return chosen
    return followers


def rack_alternated_broker_list(racks: Mapping[int, str | None]) -> list[int]:
    """Kafka's `getRackAlternatedBrokerList`: racks in name order, each rack's brokers in id
    order, one broker of each rack in turn. {0: r1, 1: r3, 2: r3, 3: r2, 4: r2, 5: r1}
    gives [0, 3, 1, 5, 4, 2]."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in sorted(racks.items()):
        by_rack.setdefault(str(rack), []).append(broker)
    columns = [by_rack[r] for r in sorted(by_rack)]
    return [column[i] for i in range(max(map(len, columns), default=0)) for column in columns if i < len(column)]


def enforced_broker_racks(brokers: Brokers) -> dict[int, str | None]:
    """`broker_racks`, refusing some brokers with a rack and some without as Kafka's
    AdminZkClient.getBrokerMetadatas(RackAwareMode.Enforced) does (CreatePartitions checks
    this first, before any topic of the request)."""
    racks = broker_racks(brokers)
    if any(rack is not None for rack in racks.values()) and any(rack is None for rack in racks.values()):
        raise AdminOperationError(NOT_ALL_RACKS_ENFORCED)
    return racks


def assign_new_partitions(topic: str, brokers: Brokers, existing: Mapping[int, Sequence[int]],
                          total_partitions: int) -> dict[int, tuple[int, ...]]:
    """The replicas of the partitions that grow a topic from `existing` to `total_partitions`
    (Kafka's AdminZkClient.createNewPartitionsAssignment, for CreatePartitions): the existing
    replication factor, starting at the first broker whose id is at least partition 0's leader,
    partition ids continuing from the existing ones. Some brokers with a rack and some without
    is refused with RackAwareMode.Enforced's message."""
    racks = enforced_broker_racks(brokers)
    if 0 not in existing:
        raise AdminOperationError(f"Unexpected existing replica assignment for topic '{topic}', partition id 0 "
                                  f"is missing. Assignment: {dict(existing)}")
    to_add = total_partitions - len(existing)
    if to_add <= 0:
        raise InvalidPartitionsError(
            f"The number of partitions for a topic can only be increased. Topic {topic} currently has "
            f"{len(existing)} partitions, {total_partitions} would not be an increase.")
    partition0 = existing[0]
    ids = list(racks)
    start_index = max(0, next((i for i, b in enumerate(ids) if b >= partition0[0]), -1))
    return assign_replicas_to_brokers(to_add, len(partition0), racks, fixed_start_index=start_index,
                                      start_partition_id=len(existing))


def assign_replicas(brokers: Brokers, num_partitions: int, replication_factor: int, *,
                    rng: random.Random | None = None) -> dict[int, tuple[int, ...]]:
    """`assign_replicas_to_brokers` with the brokers (ids, or id -> rack) first (the coordinator's call shape)."""
    return assign_replicas_to_brokers(num_partitions, replication_factor, brokers, rng=rng)


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
