"""The controller's decisions, as pure functions: partition leader election and the
metadata snapshot it hands to front-ends. No ZooKeeper, no Ray: the coordinator actor reads
state through `ZkStore`, calls these, and writes back what changed.

Election follows Kafka 3.9's ZooKeeper-mode controller (`PartitionStateMachine` and
`ReplicaStateMachine`):
- a new partition's leader is its first live replica, its ISR all live replicas, epoch 0;
- a partition whose leader is dead (or which has none) gets as leader the first replica, in
  assignment order, that is live and in the ISR; the ISR drops the dead; leader_epoch + 1;
- with no live ISR member it stays offline (leader -1, leader_epoch + 1, the dead removed
  from the ISR except the last one, so that broker can lead again when it returns) unless
  unclean election is enabled: then the first live replica leads with ISR [leader] and
  `leader_recovery_state` RECOVERING (KIP-704);
- a partition whose leader lives but a follower died loses that follower from the ISR, and
  its leader_epoch goes up by one (`LeaderAndIsr.newLeaderAndIsr`, as the ZK controller's
  `removeReplicasFromIsr` does).
A replica counts as live only if its broker is live *and* that broker has not reported it
offline (Kafka's `isReplicaOnline`: a replica on a failed log dir; in rafka, a replica whose
process died or cannot start): an offline leader loses leadership to a live ISR member, an
offline follower leaves the ISR, and every broker's metadata lists it in `offline_replicas`.
When it runs again it is live once more; it rejoins the ISR through its leader (AlterIsr),
and leadership comes back through a preferred-leader election, as after a broker restart.
Every changed state carries the caller's controller_epoch and the `zk_version` it was read
at, so the write can be conditional.
"""
from __future__ import annotations

import enum
from dataclasses import replace
from typing import Collection, Mapping

from rafka.common.errors import ErrorCode
from rafka.common.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
from rafka.common.types import INTERNAL_TOPICS, TopicPartition
from rafka.coordinator.zk.zk_data import (LEADER_RECOVERY_RECOVERING, NO_LEADER, ZERO_UUID, BrokerRegistration,
                                       PartitionState, TopicAssignment)
from rafka.partition_worker.messages import AlterIsr


# The brokers whose replica of a partition is offline although the broker lives, by partition.
OfflineReplicas = Mapping[TopicPartition, frozenset[int]]


def offline_by_partition(reports: Mapping[int, Collection[TopicPartition]],
                         live_brokers: Collection[int]) -> dict[TopicPartition, frozenset[int]]:
    """Turn the live brokers' reports (broker -> its offline replicas) around, by partition
    (Kafka's `replicasOnOfflineDirs`). A dead broker's report does not count: all its
    replicas are offline anyway, and it clears its report before it registers again."""
    by_partition: dict[TopicPartition, set[int]] = {}
    for broker, partitions in reports.items():
        if broker in live_brokers:
            for tp in partitions:
                by_partition.setdefault(tp, set()).add(broker)
    return {tp: frozenset(brokers) for tp, brokers in sorted(by_partition.items())}


def online_replicas(tp: TopicPartition, live_brokers: Collection[int],
                    offline: OfflineReplicas | None = None) -> frozenset[int]:
    """The brokers whose replica of `tp` can lead or be in its ISR (Kafka's `isReplicaOnline`):
    live, and not reporting that replica offline."""
    return frozenset(live_brokers) - (offline or {}).get(tp, frozenset())


def initial_partition_state(replicas: tuple[int, ...], live_brokers: Collection[int],
                            controller_epoch: int) -> PartitionState | None:
    """State of a new partition, or None when none of its replicas is live (Kafka leaves such
    a partition in NewPartition and retries when a replica's broker starts)."""
    live = [r for r in replicas if r in live_brokers]
    if not live:
        return None
    return PartitionState(leader=live[0], leader_epoch=0, isr=tuple(live), controller_epoch=controller_epoch)


def elect_partition(replicas: tuple[int, ...], state: PartitionState | None, live_brokers: Collection[int],
                    controller_epoch: int, *, unclean_leader_election: bool = False) -> PartitionState | None:
    """The new state of one partition given the live brokers, or None when nothing changes."""
    if state is None:
        return initial_partition_state(replicas, live_brokers, controller_epoch)
    live_isr = tuple(r for r in state.isr if r in live_brokers)
    if state.leader != NO_LEADER and state.leader in live_brokers:
        if live_isr == state.isr:
            return None
        return _changed(state, state.leader, live_isr, controller_epoch)
    leader = next((r for r in replicas if r in live_brokers and r in state.isr), None)
    if leader is not None:
        return _changed(state, leader, live_isr, controller_epoch)
    if unclean_leader_election:
        leader = next((r for r in replicas if r in live_brokers), None)
        if leader is not None:
            return replace(_changed(state, leader, (leader,), controller_epoch),
                           leader_recovery_state=LEADER_RECOVERY_RECOVERING)
    # Offline: keep the last ISR member so it can be elected cleanly when it comes back.
    isr = live_isr or state.isr[-1:]
    if state.leader == NO_LEADER and isr == state.isr:
        return None
    return _changed(state, NO_LEADER, isr, controller_epoch)


def _changed(state: PartitionState, leader: int, isr: tuple[int, ...], controller_epoch: int) -> PartitionState:
    return replace(state, leader=leader, isr=isr, leader_epoch=state.leader_epoch + 1,
                   controller_epoch=controller_epoch)


def elect_leaders(assignment: TopicAssignment, states: Mapping[int, PartitionState], live_brokers: Collection[int],
                  controller_epoch: int, *, unclean_leader_election: bool = False,
                  offline: OfflineReplicas | None = None) -> dict[int, PartitionState]:
    """New states of a topic's partitions that must change: partitions without a state are
    initialised, the others re-elected after broker changes or replicas going `offline` on
    live brokers. Unchanged partitions are left out; `zk_version` -1 in a result means
    "create", otherwise "set if still at that version"."""
    live = frozenset(live_brokers)
    changes: dict[int, PartitionState] = {}
    for partition, replicas in sorted(assignment.partitions.items()):
        online = online_replicas(TopicPartition(assignment.topic, partition), live, offline)
        new = elect_partition(replicas, states.get(partition), online, controller_epoch,
                              unclean_leader_election=unclean_leader_election)
        if new is not None:
            changes[partition] = new
    return changes


class Campaign(enum.Enum):
    """What a broker does about `/controller` after reading who holds it."""

    STAY = "stay"      # nothing changes: another broker holds it, or this one still does
    RUN = "run"        # nobody holds it: race to create it
    RESIGN = "resign"  # this broker thought it was the controller, but another holds it


def campaign(current_controller: int | None, broker_id: int, is_controller: bool) -> Campaign:
    """Kafka's `ZkController` elect(): a broker races for `/controller` when the node is
    gone, and gives up its role when the node names someone else."""
    if current_controller is None:
        return Campaign.RUN
    if current_controller != broker_id and is_controller:
        return Campaign.RESIGN
    return Campaign.STAY


def alter_isr(current: PartitionState | None, request: AlterIsr, replicas: tuple[int, ...],
              live_brokers: Collection[int], controller_epoch: int) -> PartitionState | ErrorCode:
    """The controller's answer to a leader's ISR change (Kafka 3.9's ZooKeeper controller,
    `processAlterPartition`): the new state to write, or the error refusing it. A request
    that asks for the state already in force gets that state back (a retry)."""
    if current is None or not replicas:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if request.leader != current.leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if request.leader_epoch != current.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if tuple(request.isr) == current.isr:
        return current
    if request.partition_epoch != current.zk_version:
        return ErrorCode.INVALID_UPDATE_VERSION
    if request.leader not in request.isr or any(b not in replicas for b in request.isr):
        return ErrorCode.INVALID_REQUEST
    if current.leader_recovery_state == LEADER_RECOVERY_RECOVERING and len(request.isr) > 1:
        return ErrorCode.INVALID_REQUEST
    if any(b not in live_brokers for b in request.isr):
        return ErrorCode.INELIGIBLE_REPLICA
    return replace(current, isr=tuple(request.isr), controller_epoch=controller_epoch)


# ---- metadata handed to front-ends --------------------------------------------------------
def build_metadata_snapshot(cluster_id: str, controller_id: int, controller_epoch: int,
                            brokers: Mapping[int, BrokerRegistration],
                            assignments: Mapping[str, TopicAssignment],
                            states: Mapping[str, Mapping[int, PartitionState]],
                            offline: OfflineReplicas | None = None) -> ClusterMetadata:
    """Combine live brokers, assignments and partition states into what front ends serve
    (UpdateMetadata). A partition without a state shows leader -1 and leader_epoch -1;
    replicas on dead brokers, and those their live brokers report `offline`, are
    `offline_replicas`. Brokers advertise their first endpoint."""
    topics: dict[str, TopicInfo] = {}
    for name, assignment in sorted(assignments.items()):
        topic_states = states.get(name, {})
        partitions = {}
        for p, replicas in sorted(assignment.partitions.items()):
            st = topic_states.get(p)
            online = online_replicas(TopicPartition(name, p), brokers, offline)
            partitions[p] = PartitionInfo(
                partition=p,
                leader=st.leader if st else NO_LEADER,
                leader_epoch=st.leader_epoch if st else -1,
                replicas=tuple(replicas),
                isr=tuple(st.isr) if st else (),
                offline_replicas=tuple(r for r in replicas if r not in online),
                partition_epoch=st.zk_version if st else -1,
            )
        topics[name] = TopicInfo(name, assignment.topic_id or ZERO_UUID, partitions,
                                 internal=name in INTERNAL_TOPICS)
    infos = {b: BrokerInfo(b, reg.endpoints[0].host, reg.endpoints[0].port, reg.rack)
             for b, reg in sorted(brokers.items())}
    return ClusterMetadata(cluster_id, controller_id, controller_epoch, infos, topics)


# ---- leader elections on demand (ElectLeaders, auto.leader.rebalance.enable) ---------------
PREFERRED, UNCLEAN = 0, 1   # ElectLeaders' election types


def elect_on_demand(election_type: int, replicas: tuple[int, ...], state: PartitionState | None,
                    live_brokers: Collection[int], controller_epoch: int) -> PartitionState | ErrorCode:
    """One partition's ElectLeaders outcome, as Kafka 3.9's controller: the new state to write,
    or the error for that partition.
    - preferred: the first assigned replica leads, if it is live and in the ISR
      (ELECTION_NOT_NEEDED when it leads already, PREFERRED_LEADER_NOT_AVAILABLE otherwise);
    - unclean: only for a partition without a live leader: the first live ISR member, else the
      first live replica with ISR [it], RECOVERING (ELECTION_NOT_NEEDED when a leader lives,
      ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica does)."""
    if state is None or not replicas:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    live = frozenset(live_brokers)
    if election_type == PREFERRED:
        preferred = replicas[0]
        if state.leader == preferred:
            return ErrorCode.ELECTION_NOT_NEEDED
        if preferred not in live or preferred not in state.isr:
            return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
        return _changed(state, preferred, state.isr, controller_epoch)
    if election_type == UNCLEAN:
        if state.leader != NO_LEADER and state.leader in live:
            return ErrorCode.ELECTION_NOT_NEEDED
        new = elect_partition(replicas, state, live, controller_epoch, unclean_leader_election=True)
        if new is None or new.leader == NO_LEADER:
            return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
        return new
    return ErrorCode.INVALID_REQUEST


def imbalanced_partitions(assignments: Mapping[str, TopicAssignment],
                          states: Mapping[str, Mapping[int, PartitionState]], live_brokers: Collection[int],
                          imbalance_percentage: int, offline: OfflineReplicas | None = None) -> list[tuple[str, int]]:
    """Partitions to move back to their preferred leader (Kafka's `checkAndTriggerAutoLeaderRebalance`):
    for each live broker, the partitions that prefer it but are led elsewhere, when their share
    of the partitions preferring it exceeds `leader.imbalance.per.broker.percentage`; only those
    whose preferred replica is in the ISR and not `offline` can move."""
    live = frozenset(live_brokers)
    preferring: dict[int, list[tuple[str, int]]] = {}
    for topic, assignment in assignments.items():
        for partition, replicas in assignment.partitions.items():
            if replicas:
                preferring.setdefault(replicas[0], []).append((topic, partition))
    moves = []
    for broker, partitions in sorted(preferring.items()):
        if broker not in live:
            continue
        elsewhere = [(t, p) for t, p in partitions
                     if (s := states.get(t, {}).get(p)) is not None and s.leader != broker]
        if len(elsewhere) * 100 > imbalance_percentage * len(partitions):
            moves += [(t, p) for t, p in elsewhere if broker in states[t][p].isr
                      and broker in online_replicas(TopicPartition(t, p), live, offline)]
    return sorted(moves)
