"""`Registration`: this broker's `/brokers/ids/<id>` in ZooKeeper, across sessions.

The znode is ephemeral: the session is the broker's liveness. At start, a registration left
by this broker's previous process (killed, not stopped; its session not yet expired) goes at
once: the log dirs' locks name that process's session (`LogDirLocks`), and holding them now
proves it gone. When the session expires (LOST) the broker is unregistered, and any
controller role went with it; on the next CONNECTED it registers again (Kafka's broker
re-registration), and the controller then sends it its replicas' roles.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Callable

from rafka.coordinator.broker.background import BackgroundTasks
from rafka.coordinator.broker.log_dir_lock import LogDirLocks
from rafka.coordinator.zk.zk_data import BrokerRegistration
from rafka.coordinator.zk.zk_store import ZkStore


class Registration:
    """Registers one broker and keeps it registered (see the module's docstring)."""

    def __init__(self, zk: ZkStore, locks: LogDirLocks, session_timeout_ms: int, tasks: BackgroundTasks,
                 log: logging.Logger | logging.LoggerAdapter, *, on_lost: Callable[[], None],
                 on_registered_again: Callable[[], None]) -> None:
        self._zk = zk
        self._locks = locks
        self._session_timeout_ms = session_timeout_ms
        self._tasks = tasks
        self._log = log
        self._on_lost = on_lost
        self._on_registered_again = on_registered_again
        self._registration: BrokerRegistration | None = None
        self._lost = False
        self._stopped = False

    async def register(self, registration: BrokerRegistration, stale_wait_s: float) -> None:
        """Remove what this broker's previous process left, register, and follow the session."""
        self._registration = registration
        broker_id = registration.broker_id
        for session_id in self._locks.previous_sessions():
            removed = await asyncio.to_thread(self._zk.remove_dead_session_nodes, broker_id, session_id)
            if removed:
                self._log.info("removed %s of this broker's previous process (ZooKeeper session 0x%x), which "
                               "held the log dirs' locks before this one", ", ".join(removed), session_id)
        await asyncio.to_thread(self._zk.register_broker, registration, stale_wait_s)
        self._locks.note_session(self._zk.session_id)
        loop = asyncio.get_running_loop()
        self._zk.on_session_state(lambda state: loop.call_soon_threadsafe(self.session_changed, state))

    def session_changed(self, state: str) -> None:
        """kazoo's session states, on the actor's loop. LOST: the session expired, and with it the
        registration; CONNECTED after that: a new session."""
        if self._stopped:
            return
        if state == "LOST":
            self._lost = True
            self._on_lost()
            self._log.warning("ZooKeeper session expired: not registered until a new session starts")
        elif state == "CONNECTED" and self._lost:
            self._lost = False
            self._tasks.spawn(self._register_again(), "registering again on a new ZooKeeper session")

    async def _register_again(self) -> None:
        try:
            await asyncio.to_thread(self._zk.register_broker, self._registration,
                                    2 * self._session_timeout_ms / 1000)
        except Exception:  # noqa: BLE001 - the session went again: its next CONNECTED retries
            self._log.exception("registering again after the session expired failed")
            self._lost = True
            return
        self._locks.note_session(self._zk.session_id)
        self._log.info("registered again at /brokers/ids/%d on a new ZooKeeper session",
                       self._registration.broker_id)
        self._on_registered_again()

    def stop(self) -> None:
        self._stopped = True
