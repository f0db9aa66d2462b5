"""`FrontendClient`: every Ray call a broker's coordinator makes to its front end actor.

One wrapper, so that each call has its bound (`control_calls.bounded`): a front end that hangs
under load, or is gone, costs its caller the timeout and a WARNING naming the call, never a
stall. The front end is created here too, pinned to the broker's node.
"""
from __future__ import annotations

import logging
from typing import Any

import ray

from rafka.actors.naming import frontend_name
from rafka.actors.ray_env import pin_to_node
from rafka.common.config import BrokerConfig
from rafka.common.metadata import ClusterMetadata
from rafka.common.types import Endpoint, TopicPartition
from rafka.coordinator.broker.control_calls import FRONTEND_CALL_TIMEOUT_S, bounded
from rafka.coordinator.group.group_coordinator import GroupSettings
from rafka.coordinator.transaction.transaction_coordinator import TxnSettings
from rafka.net.frontend_actor import Frontend
from rafka.net.socket_settings import SocketServerSettings

FrontendActor = ray.remote(Frontend)
START_TIMEOUT_S = 120.0   # a new process on a loaded machine, binding its listener

Replicas = dict[TopicPartition, tuple[Any, str]]   # partition -> (replica actor, data socket path)


class FrontendClient:
    """The front end of one broker, through bounded calls."""

    def __init__(self, broker_id: int, log: logging.Logger | logging.LoggerAdapter,
                 timeout_s: float = FRONTEND_CALL_TIMEOUT_S) -> None:
        self._broker_id = broker_id
        self._log = log
        self.timeout_s = timeout_s
        self.handle: Any = None

    def create(self, config: BrokerConfig, namespace: str, node_id: str | None, listener: Endpoint,
               coordinator: Any) -> None:
        """Start the front end actor (named, in `namespace`, on `node_id`) with the broker's
        settings; `start` opens its listener."""
        self.handle = FrontendActor.options(
            name=frontend_name(self._broker_id), namespace=namespace, num_cpus=0, max_concurrency=10000,
            **pin_to_node(node_id)).remote(
                self._broker_id, listener.host, listener.port, coordinator,
                auto_create_topics=config.auto_create_topics_enable,
                producer_id_memory_ms=config.transactional_id_expiration_ms,
                group_settings=GroupSettings.from_config(config),
                txn_settings=TxnSettings.from_config(config),
                socket_settings=SocketServerSettings.from_config(config),
                offsets_topic_configs={"cleanup.policy": "compact", "compression.type": "producer",
                                       "segment.bytes": str(config.offsets_topic_segment_bytes)})

    async def _call(self, call: Any, what: str, timeout_s: float | None = None) -> Any:
        return await bounded(call, self.timeout_s if timeout_s is None else timeout_s,
                             f"the front end's {what}", self._log)

    async def start(self) -> int:
        """Open the listener; the port it bound."""
        return await self._call(self.handle.start.remote(), "start", START_TIMEOUT_S)

    async def pid(self) -> int:
        return await self._call(self.handle.pid.remote(), "pid")

    async def quiesce(self, tp: TopicPartition) -> bool:
        """Hold new requests for `tp` and wait for those under way (a replica about to rest)."""
        return await self._call(self.handle.quiesce.remote(tp), "quiesce")

    async def update_metadata(self, metadata: ClusterMetadata, leaders: Replicas, followers: Replicas,
                              starting: frozenset[TopicPartition], dormant_leaders: dict, dormant_followers: dict
                              ) -> None:
        await self._call(self.handle.update_metadata.remote(metadata, leaders, followers, starting,
                                                            dormant_leaders, dormant_followers), "update_metadata")

    async def update_replicas(self, changed: frozenset[TopicPartition], leaders: Replicas, followers: Replicas,
                              dormant_leaders: dict, dormant_followers: dict) -> None:
        await self._call(self.handle.update_replicas.remote(changed, leaders, followers, dormant_leaders,
                                                            dormant_followers), "update_replicas")

    async def update_leaders(self, leaders: Replicas, dormant_leaders: dict) -> None:
        await self._call(self.handle.update_leaders.remote(leaders, dormant_leaders), "update_leaders")

    async def stop(self) -> None:
        """Close the listener and connections; a front end already gone is fine."""
        if self.handle is None:
            return
        try:
            await self._call(self.handle.stop.remote(), "stop")
        except Exception:  # noqa: BLE001 - already gone, or hung: it is killed next
            pass

    def kill(self) -> None:
        if self.handle is not None:
            ray.kill(self.handle)
