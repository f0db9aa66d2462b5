"""Kafka's rack-unaware replica assignment and its refusals (AdminUtils)."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from rafka.common.errors import InvalidPartitionsError, InvalidReplicationFactorError
from rafka.coordinator.controller.assignment import (InvalidReplicaAssignmentError, assign_replicas_to_brokers,
                                          validate_replica_assignment)


def test_matches_kafkas_documented_example():
    # AdminUtils scaladoc: 5 brokers, 10 partitions, RF 3, start index 0, shift 0.
    expected = {
        0: (0, 1, 2), 1: (1, 2, 3), 2: (2, 3, 4), 3: (3, 4, 0), 4: (4, 0, 1),
        5: (0, 2, 3), 6: (1, 3, 4), 7: (2, 4, 0), 8: (3, 0, 1), 9: (4, 1, 2),
    }
    assert assign_replicas_to_brokers(10, 3, [0, 1, 2, 3, 4], fixed_start_index=0) == expected


def test_random_start_is_injectable_and_spreads_leaders_evenly():
    a = assign_replicas_to_brokers(12, 2, [3, 1, 2], rng=random.Random(7))
    b = assign_replicas_to_brokers(12, 2, [1, 2, 3], rng=random.Random(7))
    assert a == b
    assert Counter(r[0] for r in a.values()) == {1: 4, 2: 4, 3: 4}
    assert all(len(set(r)) == 2 for r in a.values())


def test_start_partition_id_numbers_added_partitions():
    a = assign_replicas_to_brokers(2, 1, [0, 1], fixed_start_index=0, start_partition_id=3)
    assert sorted(a) == [3, 4]


def test_refuses_replication_factor_above_live_brokers_with_kafkas_message():
    with pytest.raises(InvalidReplicationFactorError, match=r"^Replication factor: 3 larger than available brokers: 1\.$"):
        assign_replicas_to_brokers(1, 3, [0])


@pytest.mark.parametrize("partitions", [0, -1])
def test_refuses_fewer_than_one_partition(partitions):
    with pytest.raises(InvalidPartitionsError, match="Number of partitions must be larger than 0."):
        assign_replicas_to_brokers(partitions, 1, [0])


def test_refuses_zero_replication_factor():
    with pytest.raises(InvalidReplicationFactorError, match="larger than 0"):
        assign_replicas_to_brokers(1, 0, [0])


def test_manual_assignment_accepted_and_normalised():
    assert validate_replica_assignment({1: [2, 0], 0: [0, 1]}, [0, 1, 2]) == {0: (0, 1), 1: (2, 0)}


@pytest.mark.parametrize("assignment, match", [
    ({0: [0, 0]}, "Duplicate replica"),
    ({0: [0], 1: [0, 1]}, "same number of replicas"),
    ({0: [0], 2: [1]}, "consecutive"),
    ({0: [9]}, "broker 9"),
    ({0: []}, "empty replica list"),
    ({}, "empty"),
], ids=["duplicate", "uneven-rf", "gap", "unknown-broker", "empty-replicas", "empty"])
def test_manual_assignment_refusals(assignment, match):
    with pytest.raises(InvalidReplicaAssignmentError, match=match):
        validate_replica_assignment(assignment, [0, 1])


def test_assign_replicas_broker_list_first_shape():
    from rafka.coordinator.controller.assignment import assign_replicas
    a = assign_replicas([0, 1, 2], 3, 2, rng=random.Random(1))
    assert a == assign_replicas_to_brokers(3, 2, [0, 1, 2], rng=random.Random(1))
