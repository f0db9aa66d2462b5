"""`OfflineReplicaReport`: tells the controller which of this broker's replicas are offline.

Kafka's broker, when a log dir fails, marks its replicas offline and writes
`/log_dir_event_notification/log_dir_event_<seq>` (`{"version":1,"broker":<id>,"event":1}`);
the controller then learns which replicas are offline, moves their leaderships to live ISR
members, takes them out of the ISR and lists them in every broker's `offline_replicas`. In
rafka one replica's process dies alone (kill -9, Ray's memory monitor) or fails to start (a
corrupt directory), and runs again alone once the reconciler restarts it. So the broker keeps
`/brokers/offline_replicas/<id>` equal to its reconciler's offline set, and notes a log dir
event (1 when a replica went offline, 2 when replicas only came back) at each change. The
controller reads every live broker's report at each round: a report never depends on one
notification reaching one controller.

One writer per broker, whatever its number of replicas: `report()` only records the wanted set
and wakes the writer task if it is idle; the writer writes the latest set (changes arriving
meanwhile fold into the next write), each attempt in a thread and bounded by `timeout_s`, and
retries after `retry_backoff_s` until one lands. Writes are conditional on the znode version
last seen, so an attempt abandoned on its timeout can never overwrite a later one; after a
conflict or a failure the version is read again by an attempt of its own (a read abandoned on
its timeout is simply discarded).

Async, on the coordinator's event loop; ZooKeeper calls run in threads.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Callable, Iterable, Protocol, TypeVar

from rafka.common.types import TopicPartition
from rafka.coordinator.zk.zk_data import LOG_DIR_FAILURE_EVENT, REPLICAS_ONLINE_EVENT

T = TypeVar("T")

REPORT_TIMEOUT_S = 10.0        # one ZooKeeper call of a report
REPORT_RETRY_BACKOFF_S = 1.0   # after a failed attempt


class OfflineReplicaStore(Protocol):
    """The ZooKeeper calls a report needs (`ZkStore`'s), blocking."""

    def read_offline_replicas(self, broker_id: int, timeout_s: float) -> tuple[frozenset[TopicPartition], int]: ...

    def write_offline_replicas(self, broker_id: int, partitions: Iterable[TopicPartition], expected_version: int,
                               event: int, timeout_s: float) -> int: ...


class OfflineReplicaReport:
    """Keeps one broker's offline replica report in ZooKeeper equal to the latest `report()`."""

    def __init__(self, broker_id: int, store: OfflineReplicaStore, logger: logging.LoggerAdapter | logging.Logger,
                 *, timeout_s: float = REPORT_TIMEOUT_S, retry_backoff_s: float = REPORT_RETRY_BACKOFF_S) -> None:
        self._id = broker_id
        self._store = store
        self._log = logger
        self._timeout_s = timeout_s
        self._backoff_s = retry_backoff_s
        self._wanted: frozenset[TopicPartition] = frozenset()
        self._reported: frozenset[TopicPartition] | None = None   # None: not written by this process yet
        self._version: int | None = None   # the znode's version as last seen; None: read it first
        self._task: asyncio.Task | None = None
        self._settled = asyncio.Event()
        self._stopped = False

    @property
    def reported(self) -> frozenset[TopicPartition] | None:
        """What ZooKeeper holds as far as this broker knows (None before its first write)."""
        return self._reported

    def report(self, offline: Iterable[TopicPartition]) -> None:
        """Make `offline` the broker's report; returns at once, the writer does the rest."""
        self._wanted = frozenset(offline)
        if self._wanted == self._reported or self._stopped:
            return
        self._settled.clear()
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._write_until_reported())

    async def settled(self, timeout_s: float) -> bool:
        """Wait until the latest `report()` is in ZooKeeper; False if not within `timeout_s`."""
        try:
            await asyncio.wait_for(self._settled.wait(), timeout_s)
        except asyncio.TimeoutError:
            return False
        return True

    async def clear_previous(self) -> None:
        """At start, before the broker is live: a previous process's report goes (an empty one)."""
        self.report(())
        if not await self.settled(2 * REPORT_TIMEOUT_S):
            self._log.warning("could not clear this broker's offline replica report yet; still trying")

    def stop(self) -> None:
        self._stopped = True
        if self._task is not None:
            self._task.cancel()

    async def _write_until_reported(self) -> None:
        while not self._stopped and self._wanted != self._reported:
            wanted = self._wanted
            try:
                if self._version is None:
                    _, self._version = await self._in_thread(self._store.read_offline_replicas, self._id)
                went_offline = bool(wanted - (self._reported or frozenset()))
                event = LOG_DIR_FAILURE_EVENT if went_offline else REPLICAS_ONLINE_EVENT
                self._version = await self._in_thread(self._store.write_offline_replicas, self._id, sorted(wanted),
                                                      self._version, event)
            except Exception as e:  # noqa: BLE001 - ZooKeeper slow or away, or a conflict: read again, retry
                self._version = None
                self._log.warning("could not report offline replicas %s to ZooKeeper (retrying in %.1f s): %r",
                                  sorted(str(tp) for tp in wanted), self._backoff_s, e)
                await asyncio.sleep(self._backoff_s)
                continue
            self._log.info("reported offline replicas to the controller: %s",
                           sorted(str(tp) for tp in wanted) or "none")
            self._reported = wanted
        if self._wanted == self._reported:
            self._settled.set()

    async def _in_thread(self, call: Callable[..., T], *args: object) -> T:
        """One ZooKeeper call of the store in a thread, given `timeout_s` (and a second more here)."""
        return await asyncio.wait_for(asyncio.to_thread(call, *args, self._timeout_s), self._timeout_s + 1)
