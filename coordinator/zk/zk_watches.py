"""Watches on Kafka's ZooKeeper paths, as a mixin of `ZkStore`: brokers, topics and each
topic's assignment, deletions, config changes, ISR change and log dir event notifications and
`/controller`.

Each helper calls its callback once at once and again on every change, on kazoo's event
thread: callbacks must be short and hand work to their owner (the coordinator actor only
wakes its task). `ZkWatch.cancel()` stops further callbacks.
"""
from __future__ import annotations

from typing import Any, Callable

from kazoo.client import KazooClient
from kazoo.protocol.states import ZnodeStat
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from rafka.coordinator.zk import zk_data as zd


class ZkWatch:
    """Handle of a watch helper; `cancel()` stops further callbacks."""

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ZkWatches:
    """Watch helpers over `self.client`, a started kazoo client."""

    client: KazooClient

    def _watch_children(self, path: str, convert: Callable[[list[str]], Any],
                        callback: Callable[[Any], None]) -> ZkWatch:
        handle = ZkWatch()

        def on_children(children: list[str]) -> bool | None:
            if handle.cancelled:
                return False
            callback(convert(children))
            return None

        ChildrenWatch(self.client, path, on_children)
        return handle

    def watch_brokers(self, callback: Callable[[list[int]], None]) -> ZkWatch:
        """`callback(sorted live broker ids)` now and on every change (kazoo thread)."""
        return self._watch_children(zd.BROKER_IDS_PATH, lambda c: sorted(int(x) for x in c), callback)

    def watch_topics(self, callback: Callable[[list[str]], None]) -> ZkWatch:
        """`callback(sorted topic names)` now and on every change (kazoo thread)."""
        return self._watch_children(zd.BROKER_TOPICS_PATH, sorted, callback)

    def watch_partition_modifications(self, callback: Callable[[str], None]) -> ZkWatch:
        """`callback(topic)` whenever a topic's `/brokers/topics/<t>` changes, as the watch of
        Kafka's controller (PartitionModificationsHandler) sees CreatePartitions; also once for
        each topic when it is first seen (kazoo thread). A deleted topic's watch ends, and a
        topic created again is watched afresh."""
        handle, watched = ZkWatch(), set()

        def watch_topic(topic: str) -> None:
            def on_data(data: bytes | None, stat: ZnodeStat | None) -> bool | None:
                if handle.cancelled or stat is None:
                    watched.discard(topic)
                    return False
                callback(topic)
                return None
            watched.add(topic)
            DataWatch(self.client, zd.topic_path(topic), on_data)

        def on_topics(topics: list[str]) -> None:
            for topic in topics:
                if topic not in watched:
                    watch_topic(topic)

        self._watch_children(zd.BROKER_TOPICS_PATH, sorted, on_topics)
        return handle

    def watch_delete_topics(self, callback: Callable[[list[str]], None]) -> ZkWatch:
        """`callback(sorted topics marked for deletion)` now and on every change (kazoo thread)."""
        return self._watch_children(zd.DELETE_TOPICS_PATH, sorted, callback)

    def watch_config_changes(self, callback: Callable[[list[str]], None]) -> ZkWatch:
        """`callback(sorted config_change_<seq> children)` now and on every change (kazoo thread)."""
        self.client.ensure_path(zd.CONFIG_CHANGES_PATH)
        return self._watch_children(zd.CONFIG_CHANGES_PATH, sorted, callback)

    def watch_isr_changes(self, callback: Callable[[list[str]], None]) -> ZkWatch:
        """`callback(sorted isr_change_<seq> children)` now and on every change (kazoo thread)."""
        return self._watch_children(zd.ISR_CHANGE_NOTIFICATION_PATH, sorted, callback)

    def watch_log_dir_events(self, callback: Callable[[list[str]], None]) -> ZkWatch:
        """`callback(sorted log_dir_event_<seq> children)` now and on every change (kazoo thread)."""
        return self._watch_children(zd.LOG_DIR_EVENT_NOTIFICATION_PATH, sorted, callback)

    def watch_controller(self, callback: Callable[[int | None], None]) -> ZkWatch:
        """`callback(controller broker id or None)` now and whenever `/controller` changes
        (kazoo thread)."""
        handle = ZkWatch()

        def on_data(data: bytes | None, stat: ZnodeStat | None) -> bool | None:
            if handle.cancelled:
                return False
            callback(zd.decode_controller(data) if stat is not None and data else None)
            return None

        DataWatch(self.client, zd.CONTROLLER_PATH, on_data)
        return handle
