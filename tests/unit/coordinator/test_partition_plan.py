"""CreatePartitions' validation and placement (KIP-195), without ZooKeeper: Kafka 3.9's
refusals with its messages, and new partitions that continue the topic's round robin."""
from __future__ import annotations

import pytest

from rafka.common.errors import ErrorCode, KafkaError
from rafka.common.metadata import ClusterMetadata, PartitionInfo, TopicInfo
from rafka.coordinator.admin.partition_plan import has_partitions_with_leaders, plan_new_partitions
from rafka.coordinator.controller.assignment import NOT_ALL_RACKS_ENFORCED, assign_replicas_to_brokers
from rafka.coordinator.messages import PartitionsSpec
from rafka.coordinator.zk.zk_data import ZERO_UUID, TopicAssignment

# Kafka's documented example, 5 brokers and RF 3 from start index 0: partitions 0-4 are
# (0,1,2) (1,2,3) (2,3,4) (3,4,0) (4,0,1); 5-9 shift the followers by one more.
FIVE_BROKERS = [0, 1, 2, 3, 4]
EXISTING = TopicAssignment("t", ZERO_UUID, assign_replicas_to_brokers(3, 3, FIVE_BROKERS, fixed_start_index=0))


def refusal(spec: PartitionsSpec, existing: TopicAssignment | None = EXISTING, brokers=FIVE_BROKERS) -> KafkaError:
    with pytest.raises(KafkaError) as e:
        plan_new_partitions(spec, existing, brokers)
    return e.value


def test_new_partitions_continue_the_round_robin_from_partition_zeros_leader():
    added = plan_new_partitions(PartitionsSpec("t", 7), EXISTING, FIVE_BROKERS)
    # Start index: the first live broker with an id >= partition 0's leader (0), fixed for
    # both draws, numbered from 3: exactly what creating 7 partitions at once would give.
    assert added == {p: r for p, r in assign_replicas_to_brokers(7, 3, FIVE_BROKERS, fixed_start_index=0).items()
                     if p >= 3}
    assert added == {3: (3, 4, 0), 4: (4, 0, 1), 5: (0, 2, 3), 6: (1, 3, 4)}


def test_the_start_index_follows_partition_zeros_leader_among_the_live_brokers():
    existing = TopicAssignment("t", ZERO_UUID, {0: (3,), 1: (0,)})
    # Start index 2 (broker 5, the first id >= 3); partition p's first replica is at index
    # (p + start) % n, as in Kafka: partition 2 -> index 1, partition 3 -> index 2.
    assert plan_new_partitions(PartitionsSpec("t", 4), existing, [0, 2, 5]) == {2: (2,), 3: (5,)}
    # Partition 0's leader above every live broker: start at index 0.
    existing = TopicAssignment("t", ZERO_UUID, {0: (9,)})
    assert plan_new_partitions(PartitionsSpec("t", 2), existing, [1, 2]) == {1: (2,)}


def test_the_existing_replication_factor_is_kept():
    existing = TopicAssignment("t", ZERO_UUID, {0: (0, 1), 1: (1, 2)})
    added = plan_new_partitions(PartitionsSpec("t", 5), existing, [0, 1, 2])
    assert sorted(added) == [2, 3, 4] and all(len(set(r)) == 2 for r in added.values())


def test_an_explicit_assignment_numbers_the_new_partitions_after_the_existing_ones():
    spec = PartitionsSpec("t", 5, ((4, 3, 2), (0, 1, 2)))
    assert plan_new_partitions(spec, EXISTING, FIVE_BROKERS) == {3: (4, 3, 2), 4: (0, 1, 2)}


@pytest.mark.parametrize("spec, code, message", [
    (PartitionsSpec("t", 2), ErrorCode.INVALID_PARTITIONS,
     "Topic currently has 3 partitions, which is higher than the requested 2."),
    (PartitionsSpec("t", 3), ErrorCode.INVALID_PARTITIONS, "Topic already has 3 partitions."),
    (PartitionsSpec("t", -1), ErrorCode.INVALID_PARTITIONS,
     "Topic currently has 3 partitions, which is higher than the requested -1."),
    (PartitionsSpec("t", 5, ((0, 1, 7), (8, 1, 2))), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "Unknown broker(s) in replica assignment: 7, 8."),
    (PartitionsSpec("t", 5, ((0, 1, 2),)), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "Increasing the number of partitions by 2 but 1 assignments provided."),
    (PartitionsSpec("t", 4, ((),)), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "Cannot have replication factor of 0 for partition id 3."),
    (PartitionsSpec("t", 5, ((0, 1, 2), (1, 1, 2))), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "Duplicate brokers not allowed in replica assignment: 1, 1, 2 for partition id 4."),
    (PartitionsSpec("t", 6, ((0, 1), (0, 1, 2), (4,))), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "Inconsistent replication factor between partitions, partition 0 has 3 while partitions [3, 5] have "
     "replication factors [2, 1], respectively."),
    (PartitionsSpec("nope", 4), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist."),
], ids=["fewer", "same", "negative", "unknown-brokers", "assignment-count", "empty-replicas", "duplicate-broker",
        "replication-factor", "unknown-topic"])
def test_refusals_with_kafkas_codes_and_messages(spec, code, message):
    e = refusal(spec, EXISTING if spec.name == "t" else None)
    assert (e.code, str(e)) == (code, message)


def test_a_topic_under_reassignment_is_refused():
    moving = TopicAssignment("t", ZERO_UUID, {0: (0, 1)}, adding_replicas={0: (1,)})
    e = refusal(PartitionsSpec("t", 2), moving)
    assert (e.code, str(e)) == (ErrorCode.REASSIGNMENT_IN_PROGRESS,
                                "A partition reassignment is in progress for the topic 't'.")


def test_an_illegal_topic_name_is_an_unknown_topic():
    e = refusal(PartitionsSpec("bad name!", 2), TopicAssignment("bad name!", ZERO_UUID, {0: (0,)}))
    assert e.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_brokers_with_and_without_racks_are_refused_before_anything_else():
    e = refusal(PartitionsSpec("nope", 2), None, {0: "a", 1: None})
    assert (e.code, str(e)) == (ErrorCode.UNKNOWN_SERVER_ERROR, NOT_ALL_RACKS_ENFORCED)


def test_rack_aware_placement_when_every_broker_has_a_rack():
    racks = {0: "a", 1: "b", 2: "a", 3: "b"}
    existing = TopicAssignment("t", ZERO_UUID, {0: (0, 1)})
    added = plan_new_partitions(PartitionsSpec("t", 5), existing, racks)
    assert sorted(added) == [1, 2, 3, 4]
    assert all({racks[b] for b in replicas} == {"a", "b"} for replicas in added.values())


def test_done_once_every_partition_up_to_the_count_has_a_leader():
    def metadata(leaders: dict[int, int]) -> ClusterMetadata:
        partitions = {p: PartitionInfo(p, leader, 0, (0,), (0,)) for p, leader in leaders.items()}
        return ClusterMetadata(topics={"t": TopicInfo("t", ZERO_UUID, partitions)})

    assert has_partitions_with_leaders(metadata({0: 0, 1: 0, 2: 0}), "t", 3)
    assert not has_partitions_with_leaders(metadata({0: 0, 1: 0}), "t", 3)
    assert not has_partitions_with_leaders(metadata({0: 0, 1: 0, 2: -1}), "t", 3)
    assert not has_partitions_with_leaders(metadata({0: 0}), "other", 1)
