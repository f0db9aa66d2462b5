"""Topics in ZooKeeper, as a mixin of `ZkStore`: creation, assignments, config overrides,
partition states (conditional writes, fenced by the controller epoch) and deletion. Calls
block on ZooKeeper round trips."""
from __future__ import annotations

import logging
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from rafka.common.errors import StaleControllerEpochError, TopicAlreadyExistsError, UnknownTopicOrPartitionError
from rafka.coordinator.zk import zk_data as zd
from rafka.coordinator.zk.zk_data import PartitionState, TopicAssignment
from rafka.coordinator.zk.zk_errors import PartitionStateConflictError, ZnodeVersionConflictError, raise_first

log = logging.getLogger(__name__)
state_change_log = logging.getLogger("rafka.state_change")


class ZkTopics:
    """Topics, their configs and partition states over `self.client`, a started kazoo client."""

    client: KazooClient

    # ---- topics --------------------------------------------------------------------------
    def create_topic(self, assignment: TopicAssignment, config: dict[str, Any] | None = None) -> None:
        """Write `/config/topics/<t>` and `/brokers/topics/<t>` in one transaction.
        TopicAlreadyExistsError when the topic exists. A leftover config of a deleted topic
        is overwritten, as Kafka's setOrCreateEntityConfigs does."""
        topic = assignment.topic
        config_path = zd.topic_config_path(topic)
        txn = self.client.transaction()
        if self.client.exists(config_path) is None:
            txn.create(config_path, zd.encode_topic_config(config or {}))
        else:
            txn.set_data(config_path, zd.encode_topic_config(config or {}))
        txn.create(zd.topic_path(topic), zd.encode_topic(assignment))
        results = txn.commit()
        if any(isinstance(r, NodeExistsError) for r in results):
            raise TopicAlreadyExistsError(f"Topic '{topic}' already exists.")
        raise_first(results)
        log.info("created topic %s with assignment %s and config %s", topic, assignment.partitions, config or {})

    def topic_exists(self, topic: str) -> bool:
        return self.client.exists(zd.topic_path(topic)) is not None

    def topic_names(self) -> list[str]:
        return sorted(self.client.get_children(zd.BROKER_TOPICS_PATH))

    def topic(self, topic: str) -> TopicAssignment | None:
        try:
            data, _ = self.client.get(zd.topic_path(topic))
        except NoNodeError:
            return None
        return zd.decode_topic(topic, data)

    def topic_with_version(self, topic: str) -> tuple[TopicAssignment, int] | None:
        """A topic's assignment and the znode version it was read at; None for no such topic."""
        try:
            data, stat = self.client.get(zd.topic_path(topic))
        except NoNodeError:
            return None
        return zd.decode_topic(topic, data), stat.version

    def set_topic_assignment(self, assignment: TopicAssignment, expected_version: int) -> int:
        """Replace `/brokers/topics/<t>` (CreatePartitions: the existing partitions plus the new
        ones, topic id kept) if the znode is still at `expected_version`; the controller's
        watch on it then creates the new partitions. The new version;
        ZnodeVersionConflictError when it changed meanwhile or is gone (read it again)."""
        path = zd.topic_path(assignment.topic)
        try:
            stat = self.client.set(path, zd.encode_topic(assignment), version=expected_version)
        except (BadVersionError, NoNodeError) as e:
            raise ZnodeVersionConflictError(f"{path} is no longer at version {expected_version}") from e
        log.info("updated the assignment of topic %s: %s", assignment.topic, assignment.partitions)
        return stat.version

    def topics(self) -> dict[str, TopicAssignment]:
        """Every topic's assignment by name."""
        result = {}
        for name in self.topic_names():
            assignment = self.topic(name)
            if assignment is not None:
                result[name] = assignment
        return result

    def topic_config(self, topic: str) -> dict[str, str]:
        try:
            data, _ = self.client.get(zd.topic_config_path(topic))
        except NoNodeError:
            return {}
        return zd.decode_topic_config(data)

    def set_topic_config(self, topic: str, config: dict[str, Any]) -> None:
        """Replace a topic's config overrides and write Kafka's change notification."""
        path = zd.topic_config_path(topic)
        data = zd.encode_topic_config(config)
        try:
            self.client.set(path, data)
        except NoNodeError:
            self.client.create(path, data, makepath=True)
        self.client.create(f"{zd.CONFIG_CHANGES_PATH}/{zd.CONFIG_CHANGE_PREFIX}",
                           zd.encode_config_change(f"topics/{topic}"), sequence=True, makepath=True)

    # ---- partition states ----------------------------------------------------------------
    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        try:
            data, stat = self.client.get(zd.partition_state_path(topic, partition))
        except NoNodeError:
            return None
        return zd.decode_partition_state(data, stat.version)

    def partition_states(self, topic: str) -> dict[int, PartitionState]:
        """States of a topic's partitions that have one, with their znode versions."""
        try:
            children = self.client.get_children(zd.topic_partitions_path(topic))
        except NoNodeError:
            return {}
        states = {}
        for child in children:
            state = self.partition_state(topic, int(child))
            if state is not None:
                states[int(child)] = state
        return dict(sorted(states.items()))

    def write_partition_state(self, topic: str, partition: int, state: PartitionState,
                              expected_version: int | None,
                              *, controller_epoch_zk_version: int | None = None) -> PartitionState:
        """Create the state znode (`expected_version` None or -1) or set it if still at
        `expected_version`. With `controller_epoch_zk_version`, the write also checks that
        `/controller_epoch` is unchanged (fencing a zombie controller: StaleControllerEpochError).
        Returns `state` with its new `zk_version`. PartitionStateConflictError when the
        condition fails."""
        path = zd.partition_state_path(topic, partition)
        data = zd.encode_partition_state(state)
        if expected_version is None:
            expected_version = -1
        if expected_version < 0:
            self.client.ensure_path(zd.partition_path(topic, partition))
        txn = self.client.transaction()
        if controller_epoch_zk_version is not None:
            txn.check(zd.CONTROLLER_EPOCH_PATH, controller_epoch_zk_version)
        if expected_version < 0:
            txn.create(path, data)
        else:
            txn.set_data(path, data, version=expected_version)
        results = txn.commit()
        if controller_epoch_zk_version is not None:
            check, results = results[0], results[1:]
            if isinstance(check, (BadVersionError, NoNodeError)):
                raise StaleControllerEpochError(
                    f"Controller epoch znode moved past version {controller_epoch_zk_version}: "
                    f"this broker is no longer the controller")
        outcome = results[0]
        if isinstance(outcome, (BadVersionError, NodeExistsError, NoNodeError)):
            raise PartitionStateConflictError(
                f"Conditional write of {path} at version {expected_version} failed "
                f"({type(outcome).__name__}): the partition state changed; re-read it")
        raise_first(results)
        new_version = 0 if expected_version < 0 else outcome.version
        state_change_log.info("[Controller epoch=%d] %s-%d: leader=%d leader_epoch=%d isr=%s (zk version %d)",
                              state.controller_epoch, topic, partition, state.leader, state.leader_epoch,
                              list(state.isr), new_version)
        return PartitionState(state.leader, state.leader_epoch, state.isr, state.controller_epoch,
                              state.leader_recovery_state, new_version)

    # ---- deletion ------------------------------------------------------------------------
    def delete_topic(self, topic: str) -> None:
        """Mark a topic for deletion, as Kafka's AdminZkClient.deleteTopic does: create the
        empty `/admin/delete_topics/<t>`; the controller finishes the job. Idempotent;
        UnknownTopicOrPartitionError when the topic does not exist."""
        if not self.topic_exists(topic):
            raise UnknownTopicOrPartitionError(f"Topic `{topic}` to delete does not exist")
        try:
            self.client.create(zd.delete_topic_path(topic), b"", makepath=True)
        except NodeExistsError:
            pass

    def topics_marked_for_deletion(self) -> list[str]:
        """Topics with an `/admin/delete_topics/<t>` marker, sorted."""
        return sorted(self.client.get_children(zd.DELETE_TOPICS_PATH))

    def remove_topic_paths(self, topic: str) -> None:
        """The controller's last step of a deletion: remove the topic's assignment and
        partition states, its config, and its deletion marker (in that order, as Kafka)."""
        for path, recursive in ((zd.topic_path(topic), True), (zd.topic_config_path(topic), False),
                                (zd.delete_topic_path(topic), False)):
            try:
                self.client.delete(path, recursive=recursive)
            except NoNodeError:
                pass
        log.info("removed ZooKeeper paths of deleted topic %s", topic)
