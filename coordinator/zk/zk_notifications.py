"""What brokers tell the controller through ZooKeeper, as a mixin of `ZkStore`: ISR change
notifications, log dir event notifications and each broker's report of its offline replicas.
Calls block on ZooKeeper round trips."""
from __future__ import annotations

import logging
from typing import Iterable

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from rafka.common.types import TopicPartition
from rafka.coordinator.zk import zk_data as zd
from rafka.coordinator.zk.zk_errors import ZnodeVersionConflictError

log = logging.getLogger(__name__)


class ZkNotifications:
    """Notifications and offline replica reports over `self.client`, a started kazoo client."""

    client: KazooClient

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
