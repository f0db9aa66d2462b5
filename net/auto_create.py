"""Topic auto-creation for Metadata requests, in the background (Kafka's AutoTopicCreationManager).

A Metadata request that names unknown topics with auto-creation allowed is answered at once,
LEADER_NOT_AVAILABLE for each of them, and the topics are created behind it. Waiting for the
creation instead would hold the request (creation waits until the new partitions have
leaders: about half a second idle, seconds under load), a client with a short request
timeout would give up, and every request behind it on the same connection would wait too,
because a connection's answers go out in arrival order.

One creation per topic is in flight however many requests ask for it; when it ends
(created, refused or failed: failures are logged) the next request that still finds the
topic missing starts another. `__consumer_offsets` and `__transaction_state` are created the way
their coordinators create them (their own partition counts and configs), as Kafka does.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Iterable

from rafka.common.errors import ErrorCode
from rafka.common.logging_util import Prefixed
from rafka.coordinator.group.group_coordinator import OFFSETS_TOPIC
from rafka.coordinator.messages import TopicSpec
from rafka.coordinator.transaction.transaction_log import TRANSACTION_STATE_TOPIC

log = logging.getLogger(__name__)

# Creation waits for the new partitions' leaders; with 0 the broker's coordinator uses its own bound.
_TIMEOUT_MS = 0


class TopicAutoCreator:
    """Starts background creations of topics; `create` never waits for one.

    Runs on the front end's event loop; not thread-safe. `_in_flight` maps each topic being
    created to the task creating it (several topics of one request share one task).
    """

    def __init__(self, services: Any, broker_id: int) -> None:
        self._services = services
        self._in_flight: dict[str, asyncio.Task] = {}
        self._log = Prefixed(log, f"[Frontend broker={broker_id}]")

    def create(self, names: Iterable[str]) -> None:
        """Start creating those of `names` not already being created; returns at once."""
        fresh = sorted({n for n in names if n not in self._in_flight})
        if OFFSETS_TOPIC in fresh:
            fresh.remove(OFFSETS_TOPIC)
            self._start([OFFSETS_TOPIC], self._create_internal(OFFSETS_TOPIC, self._services.ensure_offsets_topic))
        if TRANSACTION_STATE_TOPIC in fresh:
            fresh.remove(TRANSACTION_STATE_TOPIC)
            self._start([TRANSACTION_STATE_TOPIC], self._create_internal(TRANSACTION_STATE_TOPIC,
                                                                         self._services.ensure_txn_topic))
        if fresh:
            self._start(fresh, self._create_topics(fresh))

    def _start(self, names: list[str], work: Any) -> None:
        task = asyncio.ensure_future(work)
        for name in names:
            self._in_flight[name] = task

        def done(_: asyncio.Task) -> None:
            for name in names:
                if self._in_flight.get(name) is task:
                    del self._in_flight[name]

        task.add_done_callback(done)

    async def _create_topics(self, names: list[str]) -> None:
        try:
            results = await self._services.create_topics([TopicSpec(n) for n in names], False, _TIMEOUT_MS)
        except Exception as e:  # noqa: BLE001 - the broker's coordinator unreachable, ZooKeeper lost, ...
            self._log.warning("could not auto-create topic %s: %r", ", ".join(names), e)
            return
        for result in results:
            if result.error not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                self._log.warning("could not auto-create topic %s: %s %s", result.name, result.error.name,
                                  result.message or "")

    async def _create_internal(self, name: str, ensure: Any) -> None:
        try:
            await ensure()
        except Exception as e:  # noqa: BLE001
            self._log.warning("could not auto-create topic %s: %r", name, e)
