"""`ControllerLink`: one broker's side of the controller role.

Every broker runs a `Controller` that campaigns for `/controller` in ZooKeeper. This module
drives it: one controller round per wake-up (a ZooKeeper watch fired, an ISR or leader
changed; rounds never overlap), the round's metadata sent to every live broker's
coordinator (`fan_out_metadata`: LeaderAndIsr, UpdateMetadata, settle), the leader
rebalance check (auto.leader.rebalance.enable), and the death watch (the controller watches
every broker, the others watch the controller). Requests that only the controller may
decide (AlterPartition from a local leader, ElectLeaders) run here when this broker is the
controller, else on the controller's coordinator, bounded by `CONTROL_CALL_TIMEOUT_S`.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, Iterable, Protocol

from rafka.common.errors import ErrorCode
from rafka.common.metadata import ClusterMetadata
from rafka.coordinator.broker.control_calls import CONTROL_CALL_TIMEOUT_S, fan_out_metadata
from rafka.coordinator.controller.controller import Controller
from rafka.coordinator.zk.zk_store import ZkStore
from rafka.partition_worker.messages import AlterIsr

state_change = logging.getLogger("rafka.state_change")
ROUND_RETRY_S = 0.5   # after a failed controller round, before the next


class DeathWatch(Protocol):
    """Learns of brokers' deaths (`BrokerDeathWatch`)."""

    def watch(self, broker_ids: Iterable[int]) -> None: ...

    def stop(self) -> None: ...


class ControllerLink:
    """Drives this broker's `Controller` and reaches the active one (see the module's docstring)."""

    def __init__(self, broker_id: int, zk: ZkStore, controller: Controller, metadata: Callable[[], ClusterMetadata],
                 find_coordinator: Callable[[int], Any], death_watch: DeathWatch,
                 log: logging.Logger | logging.LoggerAdapter) -> None:
        self._id = broker_id
        self._find = find_coordinator   # a broker's coordinator actor by broker id (blocking; None: absent)
        self._zk = zk
        self.controller = controller
        self._metadata = metadata   # the broker's published metadata (names the controller)
        self._log = log
        self._wake = asyncio.Event()
        self._death_watch = death_watch   # its deaths come to `broker_died`
        self._stopped = False

    @property
    def is_active(self) -> bool:
        return self.controller.is_active

    def wake(self) -> None:
        """Run a controller round soon (coalesced)."""
        self._wake.set()

    async def watch_zookeeper(self) -> None:
        """A round on every change the controller acts on: the controller, brokers, topics, topic
        deletions, log dir events and partitions added (one data watch per topic)."""
        loop = asyncio.get_running_loop()

        def wake(*_: Any) -> None:   # (on kazoo's thread)
            if not self._stopped:
                loop.call_soon_threadsafe(self._wake.set)
        zk = self._zk
        for watch in (zk.watch_controller, zk.watch_brokers, zk.watch_topics, zk.watch_delete_topics):
            watch(wake)
        zk.watch_log_dir_events(lambda events: wake() if events else None)   # not when they are taken
        await asyncio.to_thread(zk.watch_partition_modifications, wake)   # (in a thread: many topics)

    async def run(self, cluster_id: str) -> None:
        """One controller round per wake-up; a failed round retries soon."""
        while not self._stopped:
            await self._wake.wait()
            self._wake.clear()
            try:
                metadata = await asyncio.to_thread(self.controller.run_round, cluster_id)
                if metadata is not None:
                    await self._send(metadata)
                self.watch_for_deaths()
            except Exception:  # noqa: BLE001 - keep the broker alive; the next event retries
                self._log.exception("controller round failed")
                await asyncio.sleep(ROUND_RETRY_S)
                self._wake.set()

    async def _send(self, metadata: ClusterMetadata) -> None:
        """The controller's orders for `metadata` to every live broker. UpdateMetadata follows
        LeaderAndIsr at once, without waiting for the replicas to start (a replica takes 0.3 s
        idle and seconds under load to start; each front end holds requests for its starting
        leaders and is told as each one starts)."""
        def coordinators() -> list[tuple[int, Any]]:
            found = ((b, self._find(b)) for b in metadata.brokers)
            return [(b, actor) for b, actor in found if actor is not None]

        found = await asyncio.to_thread(coordinators)
        await fan_out_metadata({f"broker {b}": actor for b, actor in found}, metadata, self._log)

    async def rebalance_leaders(self, imbalance_percentage: int) -> None:
        """auto.leader.rebalance.enable: on the controller, move leadership back to preferred
        replicas where a broker is imbalanced."""
        if not self.is_active:
            return
        moved = await asyncio.to_thread(self.controller.rebalance_leaders, imbalance_percentage)
        if moved:
            self._log.info("moved %d partitions back to their preferred leader", len(moved))
            self.wake()

    def session_lost(self) -> None:
        """The ZooKeeper session expired: any controller role went with its ephemeral /controller."""
        if self.is_active:
            self.controller.epoch = None
        self._death_watch.stop()

    def watch_for_deaths(self) -> None:
        """The controller watches every broker; the others watch the controller."""
        if self._stopped:
            return
        metadata = self._metadata()
        if self.is_active:
            self._death_watch.watch(metadata.brokers)
        elif metadata.controller_id >= 0:
            self._death_watch.watch((metadata.controller_id,))

    async def broker_died(self, broker_id: int, session_id: int) -> None:
        """A broker's process died (`BrokerDeathWatch`): remove the registration and controller
        role its session left behind; the ZooKeeper watches then move its leaderships, or start
        a controller election."""
        removed = await asyncio.to_thread(self._zk.remove_dead_session_nodes, broker_id, session_id)
        if removed:
            state_change.info("[Broker id=%d] broker %d died: removed %s of its expiring session",
                              self._id, broker_id, ", ".join(removed))
            self.wake()

    # -- requests only the controller decides ------------------------------------------
    async def elect_leaders(self, election_type: int, partitions: list[tuple[str, int]] | None
                            ) -> dict[tuple[str, int], ErrorCode]:
        """ElectLeaders: the controller elects, and the new leaders then reach every broker."""
        async def here(controller: Controller) -> dict[tuple[str, int], ErrorCode]:
            outcome = await asyncio.to_thread(controller.elect_leaders, election_type, partitions)
            if any(code == ErrorCode.NONE for code in outcome.values()):
                self.wake()
            return outcome

        failed = {tp: ErrorCode.NOT_CONTROLLER for tp in partitions or ()}
        return await self._on_controller("a leader election", here,
                                         lambda c: c.elect_leaders.remote(election_type, partitions), failed)

    async def alter_isr(self, request: AlterIsr) -> tuple[ErrorCode, tuple[int, ...] | None, int]:
        """A local leader's ISR change: the controller decides and writes it. Returns (error, the
        ISR in force, its partition epoch)."""
        async def here(controller: Controller) -> tuple[ErrorCode, tuple[int, ...] | None, int]:
            decided = await asyncio.to_thread(controller.alter_isr, request)
            if isinstance(decided, ErrorCode):
                return decided, None, -1
            self.wake()   # a controller round sends the new ISR to every broker
            return ErrorCode.NONE, decided.isr, decided.zk_version

        return await self._on_controller("an ISR change", here, lambda c: c.alter_isr.remote(request),
                                         (ErrorCode.NOT_CONTROLLER, None, -1))

    async def _on_controller(self, what: str, here: Callable[[Controller], Awaitable[Any]],
                             remote: Callable[[Any], Any], not_controller: Any) -> Any:
        """`here` when this broker is the controller, else `remote` on the coordinator of the
        controller the metadata names, bounded in time; `not_controller` when there is none, or
        it moved or died (the caller retries)."""
        if self.is_active:
            return await here(self.controller)
        controller_id = self._metadata().controller_id
        if controller_id < 0 or controller_id == self._id:
            return not_controller
        try:
            target = await asyncio.to_thread(self._find, controller_id)
            if target is None:
                self._log.info("controller %d is not running, for %s", controller_id, what)
                return not_controller
            return await asyncio.wait_for(remote(target), CONTROL_CALL_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - the controller moved or died: the caller retries
            self._log.info("could not reach controller %d for %s: %r", controller_id, what, e)
            return not_controller

    def stop(self) -> None:
        self._stopped = True
        self._death_watch.stop()
