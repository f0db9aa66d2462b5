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


# -- rack-aware (Kafka's AdminRackAwareTest and RackAwareTest.checkReplicaDistribution) ----------
from rafka.coordinator.controller.assignment import (NOT_ALL_RACKS, NOT_ALL_RACKS_ENFORCED,  # noqa: E402
                                                     AdminOperationError, assign_new_partitions,
                                                     rack_alternated_broker_list)
from rafka.common.errors import ErrorCode  # noqa: E402

SIX_ON_THREE_RACKS = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}
SEEDS = range(30)  # the random start index and shift: every seed must give the same properties


def check_replica_distribution(assignment, racks, partitions, rf, *, rack_aware=True, leaders_even=True,
                               replicas_even=True):
    """Kafka's RackAwareTest.checkReplicaDistribution: no broker twice in a partition; each
    partition on `rf` racks; preferred leaders and replicas spread evenly over the brokers."""
    assert sorted(assignment) == list(range(min(assignment), min(assignment) + partitions))
    for replicas in assignment.values():
        assert len(replicas) == rf and len(set(replicas)) == rf, replicas
    if rack_aware:
        assert [len({racks[b] for b in r}) for r in assignment.values()] == [rf] * partitions
    if leaders_even:
        leaders = Counter(r[0] for r in assignment.values())
        assert [leaders[b] for b in racks] == [partitions // len(racks)] * len(racks), leaders
    if replicas_even:
        counts = Counter(b for r in assignment.values() for b in r)
        assert [counts[b] for b in racks] == [partitions * rf // len(racks)] * len(racks), counts


def test_rack_alternated_broker_list_and_assignment_match_kafkas_example():
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_broker_list(racks) == [0, 3, 1, 5, 4, 2]
    assert rack_alternated_broker_list({b: r for b, r in racks.items() if b != 5}) == [0, 3, 1, 4, 2]
    assert assign_replicas_to_brokers(7, 3, racks, fixed_start_index=0, start_partition_id=0) == {
        0: (0, 3, 1), 1: (3, 1, 5), 2: (1, 5, 4), 3: (5, 4, 2), 4: (4, 2, 0), 5: (2, 0, 3), 6: (0, 4, 2)}


@pytest.mark.parametrize("partitions, rf, start", [(6, 3, 2), (6, 3, -1), (12, 2, -1), (6, 2, -1)],
                         ids=["rf3-fixed-start", "rf3-random-start", "rf2-12-partitions", "rf2-6-partitions"])
def test_rack_aware_spreads_replicas_over_racks_and_brokers_evenly(partitions, rf, start):
    for seed in SEEDS:
        a = assign_replicas_to_brokers(partitions, rf, SIX_ON_THREE_RACKS, fixed_start_index=start,
                                       rng=random.Random(seed))
        check_replica_distribution(a, SIX_ON_THREE_RACKS, partitions, rf)


def test_rack_aware_with_uneven_replicas_still_puts_each_partition_on_three_racks():
    a = assign_replicas_to_brokers(13, 3, SIX_ON_THREE_RACKS, fixed_start_index=0, start_partition_id=0)
    check_replica_distribution(a, SIX_ON_THREE_RACKS, 13, 3, leaders_even=False, replicas_even=False)


def test_rack_aware_with_uneven_racks_keeps_leaders_even():
    racks = {0: "rack1", 1: "rack1", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}
    for seed in SEEDS:
        a = assign_replicas_to_brokers(12, 3, racks, rng=random.Random(seed))
        check_replica_distribution(a, racks, 12, 3, replicas_even=False)


def test_rack_aware_expansion_numbers_from_the_start_partition():
    racks = {6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack3", 11: "rack1"}
    for seed in SEEDS:
        a = assign_replicas_to_brokers(12, 2, racks, start_partition_id=12, rng=random.Random(seed))
        assert sorted(a) == list(range(12, 24))
        check_replica_distribution(a, racks, 12, 2)


def test_rack_aware_three_brokers_on_three_racks():
    racks = {0: "rack1", 1: "rack2", 4: "rack3"}
    for seed in SEEDS:
        check_replica_distribution(assign_replicas_to_brokers(3, 2, racks, rng=random.Random(seed)), racks, 3, 2)


def test_rack_aware_large_number_of_partitions():
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1",
             6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack1", 11: "rack3"}
    for seed in SEEDS:
        check_replica_distribution(assign_replicas_to_brokers(96, 3, racks, rng=random.Random(seed)), racks, 96, 3)


@pytest.mark.parametrize("rf, racks_per_partition", [(5, 3), (2, 2)], ids=["more-replicas-than-racks",
                                                                           "fewer-replicas-than-racks"])
def test_each_partition_spans_as_many_racks_as_replicas_allow(rf, racks_per_partition):
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    for seed in SEEDS:
        for replicas in assign_replicas_to_brokers(6, rf, racks, rng=random.Random(seed)).values():
            assert len(replicas) == len(set(replicas)) == rf
            assert len({racks[b] for b in replicas}) == racks_per_partition


def test_a_single_rack_still_spreads_leaders():
    racks = dict.fromkeys(range(6), "rack1")
    a = assign_replicas_to_brokers(6, 3, racks, rng=random.Random(3))
    check_replica_distribution(a, racks, 6, 3, rack_aware=False)
    assert all(len({racks[b] for b in r}) == 1 for r in a.values())


def test_a_broker_with_a_replica_is_skipped_while_another_has_none():
    racks = {0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}
    a = assign_replicas_to_brokers(6, 4, racks, fixed_start_index=2)
    check_replica_distribution(a, racks, 6, 4, rack_aware=False, leaders_even=False, replicas_even=False)
    assert all(len({racks[b] for b in r}) == 3 for r in a.values())


@pytest.mark.parametrize("rf", [2, 3])
def test_three_brokers_on_two_racks_always_use_both_racks(rf):
    """The cluster test's layout: with rack-unaware placement some partition would sit on rack b only."""
    racks = {1001: "a", 1002: "b", 1003: "b"}
    for seed in SEEDS:
        for replicas in assign_replicas_to_brokers(3, rf, racks, rng=random.Random(seed)).values():
            assert len(set(replicas)) == rf and {racks[b] for b in replicas} == {"a", "b"}


def test_rack_unaware_placement_would_put_a_partition_on_one_rack():
    """Why the test above can fail: for 3 partitions on [a, b, b] rack-unaware placement always
    pairs the two rack-b brokers in some partition."""
    for seed in SEEDS:
        a = assign_replicas_to_brokers(3, 2, [1001, 1002, 1003], rng=random.Random(seed))
        assert any(set(r) == {1002, 1003} for r in a.values())


def test_same_seed_same_rack_aware_assignment_whatever_the_order_given():
    racks = dict(reversed(list(SIX_ON_THREE_RACKS.items())))
    assert assign_replicas_to_brokers(8, 3, racks, rng=random.Random(5)) == \
        assign_replicas_to_brokers(8, 3, SIX_ON_THREE_RACKS, rng=random.Random(5))


def test_brokers_without_racks_are_placed_rack_unaware():
    assert assign_replicas_to_brokers(10, 3, dict.fromkeys(range(5)), fixed_start_index=0) == \
        assign_replicas_to_brokers(10, 3, list(range(5)), fixed_start_index=0)


def test_some_brokers_with_a_rack_and_some_without_is_refused_with_kafkas_message():
    with pytest.raises(AdminOperationError) as e:
        assign_replicas_to_brokers(1, 1, {0: "a", 1: None})
    assert str(e.value) == NOT_ALL_RACKS == "Not all brokers have rack information for replica rack aware assignment."
    assert e.value.code == ErrorCode.UNKNOWN_SERVER_ERROR


def test_rack_aware_replication_factor_above_the_brokers_is_refused_first():
    with pytest.raises(InvalidReplicationFactorError, match=r"^Replication factor: 4 larger than available brokers: 3\.$"):
        assign_replicas_to_brokers(1, 4, {0: "a", 1: "b", 2: None})


def test_new_partitions_continue_the_topic_as_kafkas_create_partitions():
    racks = {0: "r1", 1: "r2", 2: "r1", 3: "r2"}
    existing = {0: (2, 1), 1: (3, 0)}
    added = assign_new_partitions("t", racks, existing, 5)
    # Kafka: start index = first broker with id >= partition 0's leader (2), fixed for both draws.
    assert added == assign_replicas_to_brokers(3, 2, racks, fixed_start_index=2, start_partition_id=2)
    assert sorted(added) == [2, 3, 4] and all(len({racks[b] for b in r}) == 2 for r in added.values())
    with pytest.raises(AdminOperationError, match="^" + NOT_ALL_RACKS_ENFORCED.replace(".", r"\.") + "$"):
        assign_new_partitions("t", {0: "r1", 1: None}, {0: (0,)}, 2)
    with pytest.raises(InvalidPartitionsError, match="Topic t currently has 2 partitions, 2 would not be an increase"):
        assign_new_partitions("t", racks, existing, 2)
