"""Leader election decisions of the ZooKeeper-mode controller, without ZooKeeper."""
from __future__ import annotations

import pickle

from rafka.common.types import Endpoint
from rafka.coordinator.controller.election import build_metadata_snapshot, elect_leaders, elect_partition
from rafka.coordinator.zk.zk_data import (LEADER_RECOVERY_RECOVERING, NO_LEADER, BrokerRegistration, PartitionState,
                                       TopicAssignment, new_kafka_uuid)

EPOCH = 4


def st(leader, epoch, isr, version=3, cepoch=1):
    return PartitionState(leader, epoch, tuple(isr), cepoch, zk_version=version)


def test_new_partitions_get_first_live_replica_and_live_isr():
    a = TopicAssignment("t", new_kafka_uuid(), {0: (1, 2, 3), 1: (2, 3, 1)})
    changes = elect_leaders(a, {}, {1, 3}, EPOCH)
    assert changes == {0: PartitionState(1, 0, (1, 3), EPOCH, zk_version=-1),
                       1: PartitionState(3, 0, (3, 1), EPOCH, zk_version=-1)}


def test_new_partition_with_no_live_replica_is_left_without_state():
    a = TopicAssignment("t", new_kafka_uuid(), {0: (1, 2)})
    assert elect_leaders(a, {}, {3}, EPOCH) == {}


def test_dead_leader_replaced_by_next_live_isr_member_in_assignment_order():
    new = elect_partition((1, 2, 3), st(1, 5, [1, 3, 2]), {2, 3}, EPOCH)
    assert new == PartitionState(2, 6, (3, 2), EPOCH, zk_version=3)


def test_dead_follower_shrinks_isr_and_bumps_epoch_like_zk_controller():
    new = elect_partition((1, 2, 3), st(1, 5, [1, 2, 3]), {1, 3}, EPOCH)
    assert new == PartitionState(1, 6, (1, 3), EPOCH, zk_version=3)


def test_nothing_changes_when_all_isr_members_live():
    assert elect_partition((1, 2, 3), st(1, 5, [1, 2]), {1, 2}, EPOCH) is None
    assert elect_partition((1, 2, 3), st(1, 5, [1, 2]), {1, 2, 3}, EPOCH) is None  # 3 rejoins via the leader


def test_no_live_isr_member_goes_offline_and_keeps_last_isr_member():
    new = elect_partition((1, 2), st(1, 5, [1]), {2}, EPOCH)
    assert new == PartitionState(NO_LEADER, 6, (1,), EPOCH, zk_version=3)
    # already offline and still nobody eligible: no write
    assert elect_partition((1, 2), new, {2}, EPOCH) is None


def test_offline_partition_recovers_when_isr_member_returns():
    offline = st(NO_LEADER, 6, [1])
    assert elect_partition((1, 2), offline, {1, 2}, EPOCH) == PartitionState(1, 7, (1,), EPOCH, zk_version=3)


def test_unclean_election_picks_first_live_replica_and_marks_recovering():
    new = elect_partition((1, 2, 3), st(1, 5, [1]), {3, 2}, EPOCH, unclean_leader_election=True)
    assert new == PartitionState(2, 6, (2,), EPOCH, leader_recovery_state=LEADER_RECOVERY_RECOVERING, zk_version=3)


def test_elect_leaders_reports_only_changed_partitions():
    a = TopicAssignment("t", new_kafka_uuid(), {0: (1, 2), 1: (2, 1), 2: (1, 2)})
    states = {0: st(1, 0, [1, 2]), 1: st(2, 0, [2, 1]), 2: st(1, 0, [1])}
    changes = elect_leaders(a, states, {1}, EPOCH)
    assert set(changes) == {0, 1}
    assert changes[1].leader == 1 and changes[1].leader_epoch == 1


def test_metadata_snapshot_marks_offline_replicas_and_pickles():
    tid = new_kafka_uuid()
    a = TopicAssignment("t", tid, {0: (1, 2), 1: (2, 1)})
    brokers = {1: BrokerRegistration(1, (Endpoint("PLAINTEXT", "127.0.0.1", 9092),))}
    snap = build_metadata_snapshot("cid", 1, EPOCH, brokers, {"t": a}, {"t": {0: st(1, 2, [1])}})
    p0, p1 = snap.partition("t", 0), snap.partition("t", 1)
    assert (p0.leader, p0.leader_epoch, p0.isr, p0.offline_replicas) == (1, 2, (1,), (2,))
    assert (p1.leader, p1.leader_epoch, p1.isr) == (NO_LEADER, -1, ())
    assert snap.topics["t"].topic_id == tid
    assert snap.brokers[1].host == "127.0.0.1" and snap.brokers[1].port == 9092
    assert snap.partition("nope", 0) is None
    assert pickle.loads(pickle.dumps(snap)) == snap


# ---- the campaign for /controller --------------------------------------------------------
def test_campaign_runs_when_nobody_holds_the_controller_node():
    from rafka.coordinator.controller.election import Campaign, campaign
    assert campaign(None, 1, is_controller=False) is Campaign.RUN
    assert campaign(None, 1, is_controller=True) is Campaign.RUN


def test_campaign_resigns_when_another_broker_holds_the_node():
    from rafka.coordinator.controller.election import Campaign, campaign
    assert campaign(2, 1, is_controller=True) is Campaign.RESIGN


def test_campaign_stays_when_the_role_matches_the_node():
    from rafka.coordinator.controller.election import Campaign, campaign
    assert campaign(1, 1, is_controller=True) is Campaign.STAY
    assert campaign(2, 1, is_controller=False) is Campaign.STAY


# ---- AlterPartition: a leader's ISR change ------------------------------------------------
def isr_request(isr, leader=1, leader_epoch=4, partition_epoch=7):
    from rafka.partition_worker.messages import AlterIsr
    return AlterIsr("t", 0, leader, leader_epoch, tuple(isr), partition_epoch)


def test_alter_isr_accepts_a_shrink_and_an_expand_from_the_current_leader():
    from rafka.coordinator.controller.election import alter_isr
    current = st(1, 4, (1, 2, 3), version=7)
    assert alter_isr(current, isr_request((1, 2)), (1, 2, 3), {1, 2, 3}, EPOCH) == st(1, 4, (1, 2), 7, EPOCH)
    shrunk = st(1, 4, (1,), version=7)
    assert alter_isr(shrunk, isr_request((1, 3)), (1, 2, 3), {1, 2, 3}, EPOCH).isr == (1, 3)


def test_alter_isr_refusals():
    from rafka.common.errors import ErrorCode
    from rafka.coordinator.controller.election import alter_isr
    current = st(1, 4, (1, 2, 3), version=7)
    cases = {
        "unknown partition": (None, isr_request((1,)), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        "not the leader": (current, isr_request((1,), leader=2), ErrorCode.NOT_LEADER_OR_FOLLOWER),
        "old leader epoch": (current, isr_request((1,), leader_epoch=3), ErrorCode.FENCED_LEADER_EPOCH),
        "stale partition epoch": (current, isr_request((1,), partition_epoch=6), ErrorCode.INVALID_UPDATE_VERSION),
        "leader left out": (current, isr_request((2, 3)), ErrorCode.INVALID_REQUEST),
        "not a replica": (current, isr_request((1, 9)), ErrorCode.INVALID_REQUEST),
        "dead member": (st(1, 4, (1,), version=7), isr_request((1, 3)), ErrorCode.INELIGIBLE_REPLICA),
    }
    for name, (state, request, error) in cases.items():
        assert alter_isr(state, request, (1, 2, 3), {1, 2}, EPOCH) is error, name


def test_alter_isr_to_the_state_in_force_returns_it():
    from rafka.coordinator.controller.election import alter_isr
    current = st(1, 4, (1, 2), version=9)
    assert alter_isr(current, isr_request((1, 2), partition_epoch=7), (1, 2), {1, 2}, EPOCH) is current


def test_a_recovering_leader_keeps_a_single_member_isr():
    from dataclasses import replace
    from rafka.common.errors import ErrorCode
    from rafka.coordinator.controller.election import alter_isr
    recovering = replace(st(1, 4, (1,), version=7), leader_recovery_state=LEADER_RECOVERY_RECOVERING)
    assert alter_isr(recovering, isr_request((1, 2)), (1, 2), {1, 2}, EPOCH) is ErrorCode.INVALID_REQUEST


# ---- ElectLeaders and the auto rebalance ---------------------------------------------------
from rafka.common.errors import ErrorCode  # noqa: E402
from rafka.coordinator.controller.election import PREFERRED, UNCLEAN, elect_on_demand, imbalanced_partitions  # noqa: E402
from rafka.coordinator.zk.zk_data import TopicAssignment  # noqa: E402


def test_preferred_election_moves_leadership_to_the_first_replica_when_it_is_in_sync():
    moved = elect_on_demand(PREFERRED, (1, 2, 3), st(2, 4, [2, 3, 1]), {1, 2, 3}, EPOCH)
    assert (moved.leader, moved.leader_epoch, moved.isr) == (1, 5, (2, 3, 1))
    assert elect_on_demand(PREFERRED, (1, 2, 3), st(1, 4, [1, 2]), {1, 2, 3}, EPOCH) is ErrorCode.ELECTION_NOT_NEEDED
    assert elect_on_demand(PREFERRED, (1, 2, 3), st(2, 4, [2, 3]), {1, 2, 3}, EPOCH) \
        is ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE          # not in the ISR
    assert elect_on_demand(PREFERRED, (1, 2, 3), st(2, 4, [2, 3, 1]), {2, 3}, EPOCH) \
        is ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE          # not live
    assert elect_on_demand(PREFERRED, (1, 2), None, {1, 2}, EPOCH) is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_unclean_election_on_demand_only_for_a_partition_without_a_live_leader():
    assert elect_on_demand(UNCLEAN, (1, 2), st(1, 3, [1]), {1, 2}, EPOCH) is ErrorCode.ELECTION_NOT_NEEDED
    new = elect_on_demand(UNCLEAN, (1, 2), st(-1, 3, [1]), {2}, EPOCH)
    assert (new.leader, new.isr, new.leader_epoch) == (2, (2,), 4)
    assert elect_on_demand(UNCLEAN, (1, 2), st(-1, 3, [1]), set(), EPOCH) is ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE


def test_auto_rebalance_moves_a_brokers_partitions_back_above_the_imbalance_share():
    assignments = {"t": TopicAssignment("t", None, {0: (1, 2), 1: (1, 2), 2: (2, 1), 3: (1, 2)})}
    states = {"t": {0: st(2, 1, [2, 1]), 1: st(1, 1, [1, 2]), 2: st(2, 1, [2, 1]), 3: st(2, 1, [2])}}
    # broker 1 prefers 3 partitions and leads 1 of them: 2/3 elsewhere > 10%; partition 3's ISR lacks it.
    assert imbalanced_partitions(assignments, states, {1, 2}, 10) == [("t", 0)]
    assert imbalanced_partitions(assignments, states, {1, 2}, 70) == []
    assert imbalanced_partitions(assignments, states, {2}, 10) == []   # a dead preferred leader is not waited for


# ---- replicas offline on live brokers (Kafka's log dir failure; a dead replica process) ----
from rafka.common.types import TopicPartition  # noqa: E402
from rafka.coordinator.controller.election import offline_by_partition, online_replicas  # noqa: E402

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def test_reports_count_only_for_live_brokers_and_turn_around_by_partition():
    reports = {1: {T0}, 2: {T0, T1}, 3: {T1}}
    assert offline_by_partition(reports, {1, 2}) == {T0: frozenset({1, 2}), T1: frozenset({2})}
    assert online_replicas(T0, {1, 2, 3}, offline_by_partition(reports, {1, 2, 3})) == {3}
    assert online_replicas(T0, {1, 2}) == {1, 2}


def test_an_offline_leader_replica_hands_leadership_to_the_next_live_isr_member():
    a = TopicAssignment("t", new_kafka_uuid(), {0: (1, 2, 3), 1: (2, 3, 1)})
    states = {0: st(1, 5, [1, 2, 3]), 1: st(2, 5, [2, 3, 1])}
    changes = elect_leaders(a, states, {1, 2, 3}, EPOCH, offline={T0: frozenset({1})})
    assert changes == {0: PartitionState(2, 6, (2, 3), EPOCH, zk_version=3)}   # t-1's replica on 1 runs


def test_an_offline_follower_replica_leaves_the_isr():
    a = TopicAssignment("t", new_kafka_uuid(), {0: (1, 2, 3)})
    changes = elect_leaders(a, {0: st(1, 5, [1, 2, 3])}, {1, 2, 3}, EPOCH, offline={T0: frozenset({3})})
    assert changes == {0: PartitionState(1, 6, (1, 2), EPOCH, zk_version=3)}


def test_the_only_isr_member_offline_takes_the_partition_offline_unless_unclean_is_allowed():
    a = TopicAssignment("t", new_kafka_uuid(), {0: (1, 2)})
    offline = {T0: frozenset({1})}
    states = {0: st(1, 5, [1])}
    assert elect_leaders(a, states, {1, 2}, EPOCH, offline=offline) == {
        0: PartitionState(NO_LEADER, 6, (1,), EPOCH, zk_version=3)}
    unclean = elect_leaders(a, states, {1, 2}, EPOCH, offline=offline, unclean_leader_election=True)[0]
    assert (unclean.leader, unclean.isr, unclean.leader_recovery_state) == (2, (2,), LEADER_RECOVERY_RECOVERING)


def test_a_replica_running_again_leads_an_offline_partition_or_waits_for_its_leader_to_readmit_it():
    a = TopicAssignment("t", new_kafka_uuid(), {0: (1, 2), 1: (1, 2)})
    states = {0: st(NO_LEADER, 6, [1]), 1: st(2, 6, [2])}
    # no report any more: t-0's last ISR member leads again; t-1's replica on 1 rejoins through its leader
    assert elect_leaders(a, states, {1, 2}, EPOCH, offline={}) == {
        0: PartitionState(1, 7, (1,), EPOCH, zk_version=3)}


def test_metadata_lists_replicas_reported_offline_on_live_brokers():
    a = TopicAssignment("t", new_kafka_uuid(), {0: (1, 2, 3), 1: (2, 3, 1)})
    brokers = {b: BrokerRegistration(b, (Endpoint("PLAINTEXT", "127.0.0.1", 9090 + b),)) for b in (1, 2)}
    snap = build_metadata_snapshot("cid", 1, EPOCH, brokers, {"t": a}, {"t": {0: st(2, 6, [2]), 1: st(2, 6, [2])}},
                                   {T0: frozenset({1})})
    assert snap.partition("t", 0).offline_replicas == (1, 3)   # 1 reported offline, 3's broker dead
    assert snap.partition("t", 1).offline_replicas == (3,)


def test_an_offline_replica_cannot_join_the_isr_nor_be_elected_preferred_leader():
    from rafka.coordinator.controller.election import alter_isr
    current = st(1, 4, (1, 2), version=7)
    online = online_replicas(T0, {1, 2, 3}, {T0: frozenset({3})})
    assert alter_isr(current, isr_request((1, 2, 3)), (1, 2, 3), online, EPOCH) is ErrorCode.INELIGIBLE_REPLICA
    assert alter_isr(current, isr_request((1, 2, 3)), (1, 2, 3), {1, 2, 3}, EPOCH).isr == (1, 2, 3)
    led_elsewhere = st(2, 4, [2, 1])
    assert elect_on_demand(PREFERRED, (1, 2), led_elsewhere, online_replicas(T0, {1, 2}, {T0: frozenset({1})}),
                           EPOCH) is ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assignments = {"t": TopicAssignment("t", None, {0: (1, 2)})}
    assert imbalanced_partitions(assignments, {"t": {0: led_elsewhere}}, {1, 2}, 10) == [("t", 0)]
    assert imbalanced_partitions(assignments, {"t": {0: led_elsewhere}}, {1, 2}, 10, {T0: frozenset({1})}) == []
