"""Kafka's ZooKeeper state read and written through kazoo: broker registration, controller
election with epoch fencing, topics, partition states, ISR change notifications, each
broker's offline replicas with their log dir event notifications, deletion.
Producer id blocks come from `ZkProducerIdBlocks` (zk_producer_ids.py), the watches from
`ZkWatches` (zk_watches.py); `zk_session.clear_stale_ephemerals` clears a stale run's nodes.

The JSON and paths come from `zk_data.py`. A `ZkStore` owns one kazoo session; the session
is the broker's liveness (its ephemeral `/brokers/ids/<id>` and, when it is the controller,
`/controller` vanish when it ends). Calls block the calling thread on ZooKeeper round trips;
callbacks given to the watch helpers and to `on_session_state` run on kazoo's own event
thread: keep them short and hand work to the owner (the coordinator actor) rather than
calling back into ZooKeeper synchronously from many of them.

A connect string may end with a chroot (`127.0.0.1:2181/kafka`); it is created if missing,
as Kafka does.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Iterable

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, RolledBackError
from kazoo.handlers.threading import KazooTimeoutError

from rafka.common.errors import (StaleControllerEpochError, StartupError, TopicAlreadyExistsError,
                                 UnknownTopicOrPartitionError)
from rafka.common.types import TopicPartition
from rafka.coordinator.zk import zk_data as zd
from rafka.coordinator.zk.zk_data import BrokerRegistration, PartitionState, TopicAssignment
from rafka.coordinator.zk.zk_producer_ids import ZkProducerIdBlocks
from rafka.coordinator.zk.zk_watches import ZkWatches

log = logging.getLogger(__name__)
state_change_log = logging.getLogger("rafka.state_change")


class ZnodeVersionConflictError(Exception):
    """A conditional write lost: the znode is no longer at the expected version, or its
    existence differs from what the caller assumed. Re-read it and decide again."""


class PartitionStateConflictError(ZnodeVersionConflictError):
    """A conditional write of a partition state lost: the znode is no longer at the expected
    version (someone else wrote it) or its existence differs from what the caller assumed.
    Re-read the state and decide again."""


def split_chroot(connect: str) -> tuple[str, str]:
    hosts, slash, chroot = connect.partition("/")
    return hosts, (("/" + chroot).rstrip("/") if slash else "")


class ZkStore(ZkWatches, ZkProducerIdBlocks):
    """One broker's (or tool's) view of Kafka's ZooKeeper state. Thread-safe as kazoo is."""

    def __init__(self, connect: str, session_timeout_ms: int = 18000, *, connect_timeout_s: float = 15.0) -> None:
        self.connect = connect
        self.session_timeout_ms = session_timeout_ms
        self.connect_timeout_s = connect_timeout_s
        self._client: KazooClient | None = None
        self.controller_epoch_zk_version: int | None = None  # set when this store won /controller

    # ---- lifecycle -----------------------------------------------------------------------
    @property
    def client(self) -> KazooClient:
        if self._client is None:
            raise RuntimeError("ZkStore is not started")
        return self._client

    def start(self) -> "ZkStore":
        """Connect, create the chroot and Kafka's persistent paths. StartupError when
        ZooKeeper cannot be reached within `connect_timeout_s`."""
        if self._client is not None:
            return self
        hosts, chroot = split_chroot(self.connect)
        if chroot:
            bootstrap = self._connect(hosts)
            try:
                bootstrap.ensure_path(chroot)
            finally:
                bootstrap.stop()
                bootstrap.close()
        self._client = self._connect(self.connect)
        for path in zd.PERSISTENT_PATHS:
            self._client.ensure_path(path)
        return self

    def _connect(self, hosts: str) -> KazooClient:
        client = KazooClient(hosts=hosts, timeout=self.session_timeout_ms / 1000.0)
        try:
            client.start(timeout=self.connect_timeout_s)
        except KazooTimeoutError as e:
            client.close()
            raise StartupError(f"Cannot connect to ZooKeeper at {self.connect} within "
                               f"{self.connect_timeout_s:.0f} s: is it running? (zookeeper.connect)") from e
        return client

    def stop(self) -> None:
        """Close the session: this broker's ephemeral znodes disappear at once."""
        client, self._client = self._client, None
        if client is not None:
            client.stop()
            client.close()

    def __enter__(self) -> "ZkStore":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def session_id(self) -> int:
        return self.client.client_id[0] if self.client.client_id else 0

    def on_session_state(self, callback: Callable[[str], None]) -> None:
        """Call `callback("LOST" | "SUSPENDED" | "CONNECTED")` on session changes (kazoo
        thread). After LOST, kazoo reconnects with a new session: ephemeral znodes are gone
        and the owner must register again."""
        def listener(state: KazooState) -> None:
            callback(str(state))
        self.client.add_listener(listener)

    # ---- cluster id ----------------------------------------------------------------------
    def ensure_cluster_id(self) -> str:
        """The cluster id in `/cluster/id`, created on first use."""
        try:
            self.client.create(zd.CLUSTER_ID_PATH, zd.encode_cluster_id(zd.new_cluster_id()), makepath=True)
        except NodeExistsError:
            pass
        data, _ = self.client.get(zd.CLUSTER_ID_PATH)
        return zd.decode_cluster_id(data)

    # ---- brokers -------------------------------------------------------------------------
    def generate_broker_sequence_id(self) -> int:
        """A number no other caller gets: the version of `/brokers/seqid` after an unconditional
        write to it (Kafka's KafkaZkClient.generateBrokerSequenceId); 1 on a fresh ZooKeeper.
        A generated broker.id adds reserved.broker.max.id to it."""
        try:
            return self.client.set(zd.BROKER_SEQID_PATH, b"", version=-1).version
        except NoNodeError:
            self.client.ensure_path(zd.BROKER_SEQID_PATH)
            return self.generate_broker_sequence_id()

    def register_broker(self, reg: BrokerRegistration, wait_s: float = 0.0) -> None:
        """Create the ephemeral `/brokers/ids/<id>`.

        If the node exists and belongs to this session, its data is refreshed. If it belongs
        to another session, that may be a live broker or one just killed whose session has not
        expired yet: wait up to `wait_s` for it to vanish, then StartupError.
        """
        path = zd.broker_path(reg.broker_id)
        data = zd.encode_broker(reg)
        deadline = time.monotonic() + wait_s
        while True:
            try:
                self.client.create(path, data, ephemeral=True)
                log.info("registered broker %d at %s: %s", reg.broker_id, path, data.decode())
                return
            except NodeExistsError:
                pass
            gone = threading.Event()
            stat = self.client.exists(path, watch=lambda _event: gone.set())
            if stat is None:
                continue
            if stat.ephemeralOwner == self.session_id:
                self.client.set(path, data)
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise StartupError(
                    f"Broker id {reg.broker_id} is already registered in ZooKeeper at {path} by another live "
                    f"broker (session 0x{stat.ephemeralOwner:x}); pick another broker.id. If that broker was "
                    f"just killed, its session expires within {self.session_timeout_ms} ms: retry then.")
            gone.wait(remaining)

    def remove_dead_session_nodes(self, broker_id: int, session_id: int) -> list[str]:
        """Delete `/brokers/ids/<id>` and `/controller` where the session `session_id` still
        owns them: that broker's process is known to be dead, so its session only lingers
        until it expires. Nodes of any other session (a restarted broker's) stay. Returns the
        paths removed."""
        removed = []
        for path in (zd.broker_path(broker_id), zd.CONTROLLER_PATH):
            stat = self.client.exists(path)
            if stat is None or stat.ephemeralOwner != session_id:
                continue
            try:
                self.client.delete(path, version=stat.version)
                removed.append(path)
            except (NoNodeError, BadVersionError):
                pass
        return removed

    def unregister_broker(self, broker_id: int) -> None:
        """Delete `/brokers/ids/<id>` if this session owns it."""
        path = zd.broker_path(broker_id)
        stat = self.client.exists(path)
        if stat is not None and stat.ephemeralOwner == self.session_id:
            try:
                self.client.delete(path, version=stat.version)
            except (NoNodeError, BadVersionError):
                pass

    def live_brokers(self) -> dict[int, BrokerRegistration]:
        """Registered brokers by id (a broker vanishing between list and read is left out)."""
        brokers: dict[int, BrokerRegistration] = {}
        for child in self.client.get_children(zd.BROKER_IDS_PATH):
            try:
                data, _ = self.client.get(f"{zd.BROKER_IDS_PATH}/{child}")
            except NoNodeError:
                continue
            broker_id = int(child)
            brokers[broker_id] = zd.decode_broker(broker_id, data)
        return dict(sorted(brokers.items()))

    # ---- controller ----------------------------------------------------------------------
    def try_become_controller(self, broker_id: int) -> int | None:
        """Create the ephemeral `/controller` and increment `/controller_epoch` in one
        transaction (conditional on the epoch's znode version, as Kafka does). Returns the
        new controller epoch, or None when another broker is controller."""
        for _ in range(20):
            try:
                data, stat = self.client.get(zd.CONTROLLER_EPOCH_PATH)
                epoch, version = zd.decode_controller_epoch(data), stat.version
            except NoNodeError:
                try:  # Kafka's InitialControllerEpoch is 0; the first controller gets 1
                    self.client.create(zd.CONTROLLER_EPOCH_PATH, zd.encode_controller_epoch(0))
                except NodeExistsError:
                    pass
                continue
            txn = self.client.transaction()
            txn.create(zd.CONTROLLER_PATH, zd.encode_controller(broker_id), ephemeral=True)
            txn.set_data(zd.CONTROLLER_EPOCH_PATH, zd.encode_controller_epoch(epoch + 1), version=version)
            results = txn.commit()
            if isinstance(results[0], NodeExistsError):
                return None
            if isinstance(results[1], BadVersionError):
                continue  # someone bumped the epoch between our read and write: read again
            _raise_first(results)
            self.controller_epoch_zk_version = results[1].version
            state_change_log.info("[Controller id=%d epoch=%d] became controller", broker_id, epoch + 1)
            return epoch + 1
        return None

    def resign_controller(self) -> None:
        """Delete `/controller` if this session holds it."""
        stat = self.client.exists(zd.CONTROLLER_PATH)
        self.controller_epoch_zk_version = None
        if stat is not None and stat.ephemeralOwner == self.session_id:
            try:
                self.client.delete(zd.CONTROLLER_PATH, version=stat.version)
            except (NoNodeError, BadVersionError):
                pass

    def controller_id(self) -> int | None:
        """The current controller's broker id, or None when there is none."""
        try:
            data, _ = self.client.get(zd.CONTROLLER_PATH)
        except NoNodeError:
            return None
        return zd.decode_controller(data)

    def controller_epoch(self) -> int | None:
        try:
            data, _ = self.client.get(zd.CONTROLLER_EPOCH_PATH)
        except NoNodeError:
            return None
        return zd.decode_controller_epoch(data)

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
        _raise_first(results)
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
        _raise_first(results)
        new_version = 0 if expected_version < 0 else outcome.version
        state_change_log.info("[Controller epoch=%d] %s-%d: leader=%d leader_epoch=%d isr=%s (zk version %d)",
                              state.controller_epoch, topic, partition, state.leader, state.leader_epoch,
                              list(state.isr), new_version)
        return PartitionState(state.leader, state.leader_epoch, state.isr, state.controller_epoch,
                              state.leader_recovery_state, new_version)

    # ---- ISR change notifications ----------------------------------------------------------
    def notify_isr_change(self, partitions: list[TopicPartition]) -> None:
        """Note ISR changes under `/isr_change_notification/isr_change_<seq>` (Kafka's JSON)."""
        self.client.create(f"{zd.ISR_CHANGE_NOTIFICATION_PATH}/{zd.ISR_CHANGE_PREFIX}",
                           zd.encode_isr_change(partitions), sequence=True, makepath=True)

    def take_isr_change_notifications(self) -> set[TopicPartition]:
        """Read and delete every pending ISR change notification; the partitions they name."""
        changed: set[TopicPartition] = set()
        for data in self._take_notifications(zd.ISR_CHANGE_NOTIFICATION_PATH):
            changed |= zd.decode_isr_change(data)
        return changed

    def _take_notifications(self, parent: str) -> list[bytes]:
        """Read and delete the sequential notifications under `parent`, oldest first; their data."""
        try:
            children = self.client.get_children(parent)
        except NoNodeError:
            return []
        taken = []
        for child in sorted(children):
            path = f"{parent}/{child}"
            try:
                data, _ = self.client.get(path)
                self.client.delete(path)
            except NoNodeError:
                continue
            taken.append(data)
        return taken

    # ---- offline replicas (log dir event notifications) -------------------------------------
    def take_log_dir_event_notifications(self) -> set[int]:
        """Read and delete every pending `/log_dir_event_notification/log_dir_event_<seq>`;
        the brokers they name (a malformed one is dropped, as Kafka's controller does)."""
        brokers = set()
        for data in self._take_notifications(zd.LOG_DIR_EVENT_NOTIFICATION_PATH):
            try:
                brokers.add(zd.decode_log_dir_event(data))
            except (KeyError, TypeError, ValueError):
                log.warning("dropped a malformed log dir event notification: %r", data)
        return brokers

    def offline_replicas(self, broker_ids: Iterable[int]) -> dict[int, frozenset[TopicPartition]]:
        """The replicas each of `broker_ids` reports offline (`/brokers/offline_replicas/<id>`);
        brokers with none are left out. A malformed report counts as none, with a warning."""
        reports = {}
        for broker_id in broker_ids:
            try:
                data, _ = self.client.get(zd.offline_replicas_path(broker_id))
                offline = zd.decode_offline_replicas(data)
            except NoNodeError:
                continue
            except (KeyError, TypeError, ValueError) as e:
                log.warning("ignoring the malformed offline replica report of broker %d: %s", broker_id, e)
                continue
            if offline:
                reports[broker_id] = offline
        return reports

    def read_offline_replicas(self, broker_id: int, timeout_s: float) -> tuple[frozenset[TopicPartition], int]:
        """A broker's own report and its znode version (-1: none yet), within `timeout_s`."""
        try:
            data, stat = self.client.get_async(zd.offline_replicas_path(broker_id)).get(timeout=timeout_s)
        except NoNodeError:
            return frozenset(), -1
        try:
            return zd.decode_offline_replicas(data), stat.version
        except (KeyError, TypeError, ValueError):
            return frozenset(), stat.version   # overwritten by the caller's next write

    def write_offline_replicas(self, broker_id: int, partitions: Iterable[TopicPartition], expected_version: int,
                               event: int, timeout_s: float) -> int:
        """Replace a broker's offline replica report if its znode is still at `expected_version`
        (-1: create it), then note `/log_dir_event_notification/log_dir_event_<seq>` with
        `event` so the controller reads it; each ZooKeeper call bounded by `timeout_s`. The new
        version; ZnodeVersionConflictError when another write came first (read it again).
        Conditional, so a write abandoned on a timeout can never overwrite a later one."""
        path, data = zd.offline_replicas_path(broker_id), zd.encode_offline_replicas(partitions)
        try:
            if expected_version < 0:
                self.client.create_async(path, data, makepath=True).get(timeout=timeout_s)
                version = 0
            else:
                version = self.client.set_async(path, data, version=expected_version).get(timeout=timeout_s).version
        except (BadVersionError, NodeExistsError, NoNodeError) as e:
            raise ZnodeVersionConflictError(f"{path} is no longer at version {expected_version}") from e
        self.client.create_async(f"{zd.LOG_DIR_EVENT_NOTIFICATION_PATH}/{zd.LOG_DIR_EVENT_PREFIX}",
                                 zd.encode_log_dir_event(broker_id, event), sequence=True,
                                 makepath=True).get(timeout=timeout_s)
        return version

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


def _raise_first(results: list[Any]) -> None:
    for r in results:
        if isinstance(r, Exception) and not isinstance(r, RolledBackError):
            raise r
