"""`BrokerDeathWatch`: the controller learns of a broker's death from Ray at once.

A broker's liveness is its ZooKeeper registration, which outlives a killed broker until its
session expires (zookeeper.session.timeout.ms): failover would wait that long. Ray knows
sooner: when a broker's coordinator process dies, a call outstanding on it fails with
RayActorError within a second. So the active controller keeps one call outstanding on each
live broker's coordinator (`await_stop`, which only returns on a clean stop), and when it
fails removes that broker's registration *if it still belongs to the session of the
incarnation that died* (a restarted broker has a new session, which is left alone). The
registration going is then an ordinary broker loss: the controller's ZooKeeper watch fires
and it elects new leaders.

Only a dead process counts: a call that times out or cannot be made proves nothing, and the
session expiry remains the fallback. Handles are dropped as soon as a death is seen, because
Ray keeps a dead actor's name taken while any handle to it lives, and the broker's restart
needs the name.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable, Iterable

import ray

from rafka.actors.actor_lookup import find_actor
from rafka.actors.naming import coordinator_name

SESSION_CALL_TIMEOUT_S = 30.0

OnDeath = Callable[[int, int], Awaitable[None]]   # (broker id, the ZooKeeper session it died with)


class BrokerDeathWatch:
    """One outstanding call per watched broker's coordinator; `on_death` when one dies."""

    def __init__(self, own_id: int, namespace: str, on_death: OnDeath,
                 logger: logging.LoggerAdapter | logging.Logger) -> None:
        self._own_id = own_id
        self._namespace = namespace
        self._on_death = on_death
        self._log = logger
        self._watches: dict[int, asyncio.Task] = {}

    def watch(self, broker_ids: Iterable[int]) -> None:
        """Watch exactly these brokers (this one excepted); a watch that ended is started again."""
        wanted = {b for b in broker_ids if b != self._own_id}
        for broker_id in list(self._watches):
            if broker_id not in wanted:
                self._watches.pop(broker_id).cancel()
        for broker_id in wanted:
            task = self._watches.get(broker_id)
            if task is None or task.done():
                self._watches[broker_id] = asyncio.ensure_future(self._watch(broker_id))

    def stop(self) -> None:
        self.watch(())

    async def _watch(self, broker_id: int) -> None:
        handle = await asyncio.to_thread(find_actor, coordinator_name(broker_id), self._namespace)
        if handle is None:
            return   # not started yet, or gone already: the next watch() looks again
        session = None
        try:
            session = await asyncio.wait_for(handle.zk_session_id.remote(), SESSION_CALL_TIMEOUT_S)
            await handle.await_stop.remote()
            return   # a clean stop closed its session, and with it the registration
        except ray.exceptions.RayActorError:
            del handle
            if session is None:
                return   # died before it told its session: only the expiry can tell
            self._log.warning("broker %d's coordinator died (ZooKeeper session 0x%x): removing its registration "
                              "without waiting for the session to expire", broker_id, session)
            await self._on_death(broker_id, session)
        except (asyncio.TimeoutError, ray.exceptions.RayError) as e:
            self._log.info("cannot watch broker %d: %r; the next controller round tries again", broker_id, e)
