"""Producer ids for InitProducerId (KIP-98, KIP-360): the pure core of a broker's allocator.

A broker hands out ids from blocks it claims in ZooKeeper (`ZkStore.claim_producer_id_block`,
1,000 ids each, as Kafka), so no two brokers ever give the same id. The block claims are the
caller's I/O; this class only decides: the next id, when to claim, and the KIP-360 bump.

KIP-360 for a producer without a transactional id: a client that hits an unrecoverable
sequence error may send InitProducerId with its current id and epoch. When this broker gave
out that very (id, epoch) within `transactional.id.expiration.ms`, the answer is the same id
with the epoch + 1 (the partitions then accept sequence 0 again). Otherwise — an id another
broker gave, one forgotten after a restart, an epoch that is not the latest, or an epoch that
would overflow — the producer gets a fresh id at epoch 0. Kafka 3.9 always does the latter for
idempotent producers; both are safe, because a new id or a new epoch starts sequences from 0.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Awaitable, Callable

from rafka.coordinator.zk.zk_data import ProducerIdBlock

log = logging.getLogger(__name__)

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767                 # Short.MAX_VALUE; Kafka bumps only while epoch < MAX - 1
PREFETCH_FRACTION = 0.9           # claim the next block once 90% of the current one is used
MAX_REMEMBERED_PRODUCERS = 100_000


class NeedsBlock(Exception):
    """No id is left: the caller must claim a block and call `add_block` first."""


@dataclass(frozen=True)
class ProducerIdAndEpoch:
    producer_id: int
    producer_epoch: int


class ProducerIdManager:
    """Ids from the current block, the next block once claimed, and the epochs given out.

    Not thread-safe: the owning actor serialises calls on its event loop.
    """

    def __init__(self, broker_id: int, remember_ms: int = 604_800_000,
                 max_remembered: int = MAX_REMEMBERED_PRODUCERS) -> None:
        self.broker_id = broker_id
        self.remember_ms = remember_ms
        self.max_remembered = max_remembered
        self._current: ProducerIdBlock | None = None
        self._next_id = 0
        self._spare: ProducerIdBlock | None = None
        self._given: OrderedDict[int, tuple[int, int]] = OrderedDict()  # id -> (epoch, time given)

    # -- blocks ---------------------------------------------------------------------------
    @property
    def remaining(self) -> int:
        """Ids left in the current and spare blocks."""
        left = self._current.last_producer_id - self._next_id + 1 if self._current else 0
        return left + (self._spare.size if self._spare else 0)

    def wants_block(self) -> bool:
        """True when a claim should start: no spare block and the current one is (nearly) used up."""
        if self._spare is not None:
            return False
        if self._current is None:
            return True
        used = self._next_id - self._current.first_producer_id
        return used >= self._current.size * PREFETCH_FRACTION

    def add_block(self, block: ProducerIdBlock) -> None:
        """Take a block claimed for this broker; it is used once the current one runs out."""
        if block.assigned_broker_id != self.broker_id:
            raise ValueError(f"block {block} was claimed for broker {block.assigned_broker_id}, "
                             f"not {self.broker_id}")
        if self._current is None or self._next_id > self._current.last_producer_id:
            self._current, self._next_id = block, block.first_producer_id
        else:
            self._spare = block

    def _take_id(self) -> int:
        if self._current is None or self._next_id > self._current.last_producer_id:
            if self._spare is None:
                raise NeedsBlock("no producer id left; claim a block")
            self._current, self._next_id, self._spare = self._spare, self._spare.first_producer_id, None
        producer_id = self._next_id
        self._next_id += 1
        return producer_id

    # -- InitProducerId -------------------------------------------------------------------
    def init_producer(self, producer_id: int, producer_epoch: int, now_ms: int) -> ProducerIdAndEpoch:
        """The id and epoch to answer an InitProducerId without a transactional id.

        (-1, -1) or anything not eligible for a bump gets a fresh id at epoch 0; the latest
        (id, epoch) this broker gave gets the same id at epoch + 1. Raises `NeedsBlock`.
        """
        given = self._given.get(producer_id) if producer_id >= 0 else None
        if (given is not None and given[0] == producer_epoch and now_ms - given[1] < self.remember_ms
                and producer_epoch < MAX_EPOCH - 1):
            answer = ProducerIdAndEpoch(producer_id, producer_epoch + 1)
        else:
            answer = ProducerIdAndEpoch(self._take_id(), 0)
        self._remember(answer, now_ms)
        return answer

    def _remember(self, answer: ProducerIdAndEpoch, now_ms: int) -> None:
        given = self._given
        given.pop(answer.producer_id, None)
        given[answer.producer_id] = (answer.producer_epoch, now_ms)
        while given:
            oldest_id, (_, since) = next(iter(given.items()))
            if len(given) <= self.max_remembered and now_ms - since < self.remember_ms:
                break
            del given[oldest_id]


class ProducerIdSource:
    """A `ProducerIdManager` fed by an async block claim (the broker's coordinator, which
    writes ZooKeeper). The next block is claimed in the background once 90% of the current
    one is used, so most InitProducerId requests need no round trip; one claim at a time."""

    def __init__(self, manager: ProducerIdManager, claim: Callable[[], Awaitable[ProducerIdBlock]],
                 clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.manager = manager
        self._claim = claim
        self._clock_ms = clock_ms
        self._claiming: asyncio.Future | None = None

    async def init_producer(self, producer_id: int, producer_epoch: int) -> ProducerIdAndEpoch | None:
        """The answer to an InitProducerId, or None when no block could be claimed (ZooKeeper
        unreachable): the caller answers with a retriable error."""
        for _ in range(3):
            if self.manager.wants_block() and self._claiming is None:
                self._claiming = asyncio.ensure_future(self._claim_block())
            try:
                return self.manager.init_producer(producer_id, producer_epoch, self._clock_ms())
            except NeedsBlock:
                claiming = self._claiming
                if claiming is None or not await asyncio.shield(claiming):
                    return None
        return None

    async def _claim_block(self) -> bool:
        try:
            block = await self._claim()
            self.manager.add_block(block)
            return True
        except Exception:  # noqa: BLE001 - reported to the client as a retriable error
            log.exception("[Broker %d] could not claim a producer id block", self.manager.broker_id)
            return False
        finally:
            self._claiming = None
