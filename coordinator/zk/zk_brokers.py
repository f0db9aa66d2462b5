"""Brokers and the controller in ZooKeeper, as a mixin of `ZkStore`: the cluster id, broker
ids, registration of the ephemeral `/brokers/ids/<id>`, and the controller election with
epoch fencing (`/controller`, `/controller_epoch`). Calls block on ZooKeeper round trips."""
from __future__ import annotations

import logging
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from rafka.common.errors import StartupError
from rafka.coordinator.zk import zk_data as zd
from rafka.coordinator.zk.zk_data import BrokerRegistration
from rafka.coordinator.zk.zk_errors import raise_first

log = logging.getLogger(__name__)
state_change_log = logging.getLogger("rafka.state_change")


class ZkBrokers:
    """Broker registration and the controller election over `self.client`, a started kazoo
    client whose session is the broker's liveness."""

    client: KazooClient
    session_timeout_ms: int
    session_id: int
    controller_epoch_zk_version: int | None   # set when this store won /controller

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
            raise_first(results)
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
