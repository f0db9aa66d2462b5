"""`Controller`: this broker's controller duties, carried out on ZooKeeper.

Every broker runs one; at most one is *the* controller at a time, the broker whose ephemeral
`/controller` node exists, with a `controller_epoch` strictly larger than any before it (a
conditional update of `/controller_epoch`). While it holds the role, each round:
1. finishes pending topic deletions (`/admin/delete_topics/<t>`: remove the topic's paths);
2. reads which replicas each live broker reports offline (`/brokers/offline_replicas/<id>`,
   which a broker rewrites, then notes `/log_dir_event_notification`, whenever one of its
   replica processes dies, fails to start or runs again: the notes only wake the controller,
   which reads every report each round, so a controller that moves loses none) and elects
   leaders for partitions that are new or whose leader or ISR members died or went offline
   (`election.elect_leaders`; a partition left without a live ISR member gets a replica
   outside the ISR only where `unclean.leader.election.enable` is true, for the topic or
   the broker) and writes each changed partition state conditionally on the
   version it read and on `/controller_epoch` being unchanged since it won (one ZooKeeper
   transaction, as Kafka's `checkControllerAndUpdate`): a deposed controller's write is
   refused (StaleControllerEpochError) and it resigns without changing anything;
3. builds the metadata snapshot every broker's coordinator is then sent (LeaderAndIsr +
   UpdateMetadata in one message).
The decisions are pure functions in `election.py`; this class only reads and writes.

Blocking (kazoo): the coordinator actor calls `run_round` in a thread, one round at a time.
"""
from __future__ import annotations

import logging

from rafka.common.errors import ErrorCode, StaleControllerEpochError
from rafka.common.metadata import ClusterMetadata
from rafka.common.types import TopicPartition
from rafka.coordinator.controller.election import (Campaign, OfflineReplicas, alter_isr, build_metadata_snapshot,
                                                   campaign, elect_leaders, elect_on_demand, imbalanced_partitions,
                                                   offline_by_partition, online_replicas)
from rafka.coordinator.zk.zk_data import NO_LEADER, BrokerRegistration, PartitionState
from rafka.coordinator.zk.zk_errors import PartitionStateConflictError
from rafka.coordinator.zk.zk_store import ZkStore
from rafka.partition_worker.messages import AlterIsr

state_change = logging.getLogger("rafka.state_change")


class Controller:
    """One broker's controller role: campaign for it, and act while holding it."""

    def __init__(self, broker_id: int, zk: ZkStore, unclean_leader_election: bool = False) -> None:
        self._id = broker_id
        self._zk = zk
        self._unclean_default = unclean_leader_election
        self.epoch: int | None = None   # set while this broker is the controller
        self._offline_seen: OfflineReplicas = {}   # the last round's, to log what changed

    @property
    def is_active(self) -> bool:
        return self.epoch is not None

    def run_round(self, cluster_id: str) -> ClusterMetadata | None:
        """Campaign for the role, and as the controller elect, write and build the metadata
        every broker must get; None when this broker is not the controller."""
        self.campaign()
        if self.epoch is None:
            return None
        try:
            return self.elect_and_describe(cluster_id)
        except StaleControllerEpochError:
            # Kafka's ControllerMovedException: step down and free /controller for a new election.
            state_change.warning("[Controller id=%d epoch=%d] a newer controller epoch exists: resigning "
                                 "without changing anything", self._id, self.epoch)
            self.epoch = None
            self._zk.resign_controller()
            return None

    def campaign(self) -> None:
        action = campaign(self._zk.controller_id(), self._id, self.is_active)
        if action is Campaign.RUN:
            epoch = self._zk.try_become_controller(self._id)
            if epoch is not None:
                self.epoch = epoch
                state_change.info("[Controller id=%d epoch=%d] became the controller", self._id, epoch)
        elif action is Campaign.RESIGN:
            state_change.info("[Controller id=%d] resigned: broker %s is the controller",
                              self._id, self._zk.controller_id())
            self.epoch = None

    def elect_and_describe(self, cluster_id: str) -> ClusterMetadata:
        """One controller round over every topic (see the module docstring)."""
        zk, epoch = self._zk, self.epoch
        assert epoch is not None
        brokers = zk.live_brokers()
        zk.take_isr_change_notifications()   # every round sends all states; the notes are consumed
        # Consumed before the reports are read: a report written later comes with a new note.
        for broker in sorted(zk.take_log_dir_event_notifications()):
            state_change.info("[Controller id=%d epoch=%d] broker %d's offline replicas changed",
                              self._id, epoch, broker)
        offline = self._offline_replicas(brokers)
        if offline != self._offline_seen:
            for tp in sorted(set(offline) | set(self._offline_seen)):
                now, before = offline.get(tp, frozenset()), self._offline_seen.get(tp, frozenset())
                if now != before:
                    state_change.info("[Controller id=%d epoch=%d] %s: replicas offline on live brokers %s -> %s",
                                      self._id, epoch, tp, sorted(before), sorted(now))
            self._offline_seen = offline
        for topic in zk.topics_marked_for_deletion():
            zk.remove_topic_paths(topic)
            state_change.info("[Controller id=%d epoch=%d] deleted topic %s", self._id, epoch, topic)
        topics = zk.topics()
        all_states = {}
        for name, topic in topics.items():
            states = zk.partition_states(name)
            changes = elect_leaders(topic, states, set(brokers), epoch, offline=offline)
            if any(s.leader == NO_LEADER for s in changes.values()) and self._unclean_allowed(name):
                changes = elect_leaders(topic, states, set(brokers), epoch, unclean_leader_election=True,
                                        offline=offline)
            for p, state in changes.items():
                old = states.get(p)
                states[p] = zk.write_partition_state(name, p, state, None if old is None else old.zk_version,
                                                     controller_epoch_zk_version=zk.controller_epoch_zk_version)
                state_change.info("[Controller id=%d epoch=%d] %s-%d leader=%d leader_epoch=%d isr=%s",
                                  self._id, epoch, name, p, state.leader, state.leader_epoch, list(state.isr))
            all_states[name] = states
        return build_metadata_snapshot(cluster_id, self._id, epoch, brokers, topics, all_states, offline)

    def _offline_replicas(self, brokers: dict[int, BrokerRegistration]) -> OfflineReplicas:
        """The replicas the live `brokers` report offline, by partition."""
        return offline_by_partition(self._zk.offline_replicas(brokers), brokers)

    def elect_leaders(self, election_type: int,
                      partitions: list[tuple[str, int]] | None) -> dict[tuple[str, int], ErrorCode]:
        """ElectLeaders (or the auto rebalance): elect `partitions` (None: every partition) by
        `election_type` (`election.PREFERRED` or `UNCLEAN`), writing each changed state
        conditionally and fenced by this controller's epoch; the outcome per partition. The
        next round sends the new leaders to every broker."""
        if self.epoch is None:
            return {tp: ErrorCode.NOT_CONTROLLER for tp in partitions or ()}
        zk, brokers = self._zk, self._zk.live_brokers()
        live, offline = set(brokers), self._offline_replicas(brokers)
        topics = zk.topics()
        wanted = partitions if partitions is not None else \
            [(t, p) for t, a in sorted(topics.items()) for p in sorted(a.partitions)]
        outcome: dict[tuple[str, int], ErrorCode] = {}
        for topic, partition in wanted:
            assignment = topics.get(topic)
            replicas = () if assignment is None else assignment.partitions.get(partition, ())
            current = zk.partition_state(topic, partition) if replicas else None
            online = online_replicas(TopicPartition(topic, partition), live, offline)
            decided = elect_on_demand(election_type, replicas, current, online, self.epoch)
            if isinstance(decided, ErrorCode):
                outcome[(topic, partition)] = decided
                continue
            try:
                zk.write_partition_state(topic, partition, decided, current.zk_version,
                                         controller_epoch_zk_version=zk.controller_epoch_zk_version)
            except PartitionStateConflictError:
                outcome[(topic, partition)] = ErrorCode.NOT_CONTROLLER   # changed meanwhile: ask again
                continue
            except StaleControllerEpochError:
                self.epoch = None
                zk.resign_controller()
                outcome.update({tp: ErrorCode.NOT_CONTROLLER for tp in wanted if tp not in outcome})
                return outcome
            state_change.info("[Controller id=%d epoch=%d] %s-%d elected leader %d (leader_epoch %d, %s election)",
                              self._id, self.epoch, topic, partition, decided.leader, decided.leader_epoch,
                              "preferred" if election_type == 0 else "unclean")
            outcome[(topic, partition)] = ErrorCode.NONE
        return outcome

    def rebalance_leaders(self, imbalance_percentage: int) -> list[tuple[str, int]]:
        """auto.leader.rebalance.enable: move leadership back to preferred replicas on brokers
        whose share of partitions led elsewhere exceeds the percentage; the partitions moved."""
        if self.epoch is None:
            return []
        zk = self._zk
        topics = zk.topics()
        states = {name: zk.partition_states(name) for name in topics}
        brokers = zk.live_brokers()
        moves = imbalanced_partitions(topics, states, set(brokers), imbalance_percentage,
                                      self._offline_replicas(brokers))
        if not moves:
            return []
        outcome = self.elect_leaders(0, moves)
        return [tp for tp, code in outcome.items() if code == ErrorCode.NONE]

    def _unclean_allowed(self, topic: str) -> bool:
        """`unclean.leader.election.enable` of `topic`: its override, or the broker's."""
        override = self._zk.topic_config(topic).get("unclean.leader.election.enable")
        return self._unclean_default if override is None else str(override).strip().lower() == "true"

    def alter_isr(self, request: AlterIsr) -> PartitionState | ErrorCode:
        """A leader's ISR change (AlterPartition): validated by `election.alter_isr`, written
        conditionally on the partition state's version and this controller's epoch, and
        noted under `/isr_change_notification` as Kafka's brokers do. The new state (its
        `zk_version` is the partition epoch to use next), or the error refusing it."""
        if self.epoch is None:
            return ErrorCode.NOT_CONTROLLER
        zk = self._zk
        assignment = zk.topic(request.topic)
        replicas = () if assignment is None else assignment.partitions.get(request.partition, ())
        current = zk.partition_state(request.topic, request.partition)
        brokers = zk.live_brokers()   # a replica its broker reports offline cannot join the ISR either
        online = online_replicas(TopicPartition(request.topic, request.partition), brokers,
                                 self._offline_replicas(brokers))
        decided = alter_isr(current, request, replicas, online, self.epoch)
        if isinstance(decided, ErrorCode) or decided is current:
            return decided
        try:
            written = zk.write_partition_state(request.topic, request.partition, decided, current.zk_version,
                                               controller_epoch_zk_version=zk.controller_epoch_zk_version)
        except PartitionStateConflictError:
            return ErrorCode.INVALID_UPDATE_VERSION
        except StaleControllerEpochError:
            self.epoch = None
            zk.resign_controller()
            return ErrorCode.NOT_CONTROLLER
        zk.notify_isr_change([TopicPartition(request.topic, request.partition)])
        state_change.info("[Controller id=%d epoch=%d] %s-%d isr %s -> %s (leader %d, leader_epoch %d)",
                          self._id, self.epoch, request.topic, request.partition, list(current.isr),
                          list(written.isr), written.leader, written.leader_epoch)
        return written
