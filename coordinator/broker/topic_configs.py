"""`TopicConfigs`: the log config of each topic this broker hosts, kept in step with ZooKeeper.

A topic's config is the broker's log config with the topic's overrides (`/config/topics/<t>`).
When a config change notification arrives, every topic with replicas here is read again, and
the replicas of a topic whose config changed get the new one (retention, segment sizes,
cleanup policy take effect at once, as in Kafka's dynamic topic configs).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Coroutine, Mapping

from rafka.common.config import BrokerConfig, LogConfig
from rafka.common.types import TopicPartition
from rafka.coordinator.broker.log_maintenance import LogMaintenance
from rafka.coordinator.zk.zk_store import ZkStore


class TopicConfigs:
    """Topic configs of one broker's replicas (see the module's docstring)."""

    def __init__(self, config: BrokerConfig, zk: Callable[[], ZkStore], maintenance: LogMaintenance,
                 replicas: Callable[[], Mapping[TopicPartition, Any]], update: Callable[[Any, LogConfig], Any],
                 log: logging.Logger | logging.LoggerAdapter) -> None:
        self._config = config
        self._zk = zk                  # (set once the broker has connected)
        self._maintenance = maintenance
        self._replicas = replicas      # running replicas (LaunchedReplica)
        self._update = update          # hand one replica its new config
        self._log = log
        self._known: dict[str, LogConfig] = {}

    async def get(self, topic: str) -> LogConfig:
        """The log config of `topic`: the broker's, with the topic's overrides from ZooKeeper."""
        overrides = await asyncio.to_thread(self._zk().topic_config, topic)
        config = self._config.log_config().with_overrides(overrides)
        self._known[topic] = config
        return config

    def watch(self, spawn: Callable[[Coroutine[Any, Any, Any], str], Any]) -> None:
        """Apply config changes as ZooKeeper notifies them (`spawn` runs the work on the actor's loop)."""
        loop = asyncio.get_running_loop()
        self._zk().watch_config_changes(
            lambda *_: loop.call_soon_threadsafe(spawn, self.apply_changes(), "applying topic config changes"))

    async def apply_changes(self) -> None:
        """A config change notification: hand replicas whose topic config changed the new one."""
        replicas = self._replicas()
        for topic in sorted({tp.topic for tp in replicas}):
            previous = self._known.get(topic)
            try:
                config = await self.get(topic)
            except Exception:  # noqa: BLE001 - a topic deleted meanwhile, or a bad znode
                self._log.exception("could not read the config of topic %s", topic)
                continue
            if previous == config:
                continue
            mine = [tp for tp in list(replicas) if tp.topic == topic]
            for tp in mine:
                self._maintenance.config_changed(tp, config)
            await asyncio.gather(*[self._update(replicas[tp], config) for tp in mine if tp in replicas],
                                 return_exceptions=True)
            self._log.info("applied the new config of topic %s to %d replicas", topic, len(mine))
