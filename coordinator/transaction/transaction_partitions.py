"""Which `__transaction_state` partitions the transaction coordinator of one broker owns: the
ones its broker leads, each loaded from its log when the leadership comes (Kafka's
`TransactionStateManager.loadTransactionsForTxnTopicPartition`), with its coordinator epoch
(the partition's leader epoch), and the transactional ids they hold. The ownership answer for
a transactional id (NONE, COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR) comes from here.

Runs on the front end's event loop; a load is a task of its own, retried with backoff while
the log cannot be read, and cancelled when the partition is no longer led here.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import time
from typing import AsyncIterator, Callable, Protocol

from rafka.common.errors import ErrorCode
from rafka.coordinator.transaction import transaction_log
from rafka.coordinator.transaction.transaction_log import TRANSACTION_STATE_TOPIC
from rafka.coordinator.transaction.transaction_metadata import TransactionMetadata

# A failed load of a partition is retried after the first backoff, doubling up to this.
_MAX_LOAD_RETRY_BACKOFF_MS = 5000

Loaded = Callable[[int, int, dict[str, TransactionMetadata]], None]


class TxnLogReader(Protocol):
    def read_txn_log(self, partition: int) -> AsyncIterator[bytes]:
        """The partition's batches from its log start to its log end (a load)."""


class TxnPartitions:
    """The led partitions: their coordinator epochs, the loaded ones' transactional ids, the
    loading ones' tasks. `loaded(partition, epoch, ids)` is called once a load is done."""

    def __init__(self, partitions: int, reader: TxnLogReader, loaded: Loaded, *, load_retry_backoff_ms: int,
                 log: logging.LoggerAdapter) -> None:
        self.partitions = partitions
        self._reader = reader
        self._on_loaded = loaded
        self._backoff_ms = load_retry_backoff_ms
        self._log = log
        self._epochs: dict[int, int] = {}                       # led partition -> coordinator epoch
        self._loaded: dict[int, dict[str, TransactionMetadata]] = {}
        self._loading: dict[int, asyncio.Task] = {}

    def partition_for(self, transactional_id: str) -> int:
        return transaction_log.partition_for(transactional_id, self.partitions)

    def set_led(self, partitions: dict[int, int]) -> None:
        """The partitions led here with their leader epochs: load new ones (or ones whose
        epoch moved) in the background, forget the ones lost."""
        for partition, epoch in sorted(partitions.items()):
            if self._epochs.get(partition) == epoch:
                continue
            self._unload(partition)
            self._epochs[partition] = epoch
            self._loading[partition] = asyncio.ensure_future(self._load(partition, epoch))
        for partition in sorted(set(self._epochs) - set(partitions)):
            self._unload(partition)

    def stop(self) -> None:
        for task in self._loading.values():
            task.cancel()
        self._loading.clear()

    def check(self, transactional_id: str) -> ErrorCode:
        """NONE when this broker coordinates `transactional_id` and has loaded it."""
        partition = self.partition_for(transactional_id)
        if partition in self._loaded:
            return ErrorCode.NONE
        if partition in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NOT_COORDINATOR

    def owner(self, partition: int, epoch: int) -> bool:
        """Whether the partition is still loaded here at coordinator epoch `epoch`."""
        return partition in self._loaded and self._epochs.get(partition) == epoch

    def ids(self, partition: int) -> dict[str, TransactionMetadata]:
        """The transactional ids of a loaded partition (the live map: callers add and remove)."""
        return self._loaded[partition]

    def epoch(self, partition: int) -> int:
        return self._epochs.get(partition, -1)

    def loaded(self) -> list[tuple[int, int, dict[str, TransactionMetadata]]]:
        """(partition, coordinator epoch, its ids) of every loaded partition."""
        return [(p, self._epochs[p], ids) for p, ids in list(self._loaded.items())]

    def _unload(self, partition: int) -> None:
        task = self._loading.pop(partition, None)
        if task is not None:
            task.cancel()
        self._epochs.pop(partition, None)
        dropped = self._loaded.pop(partition, None)
        if dropped is not None:
            self._log.info("unloaded %s-%d (%d transactional ids)", TRANSACTION_STATE_TOPIC, partition, len(dropped))

    async def _load(self, partition: int, epoch: int) -> None:
        backoff_ms = self._backoff_ms
        try:
            for attempt in itertools.count(1):
                try:
                    await self._load_once(partition, epoch)
                    return
                except asyncio.CancelledError:
                    raise
                except Exception as e:  # noqa: BLE001 - retried while the partition is led here
                    self._log.warning("failed to load %s-%d (attempt %d): %r", TRANSACTION_STATE_TOPIC, partition,
                                      attempt, e)
                await asyncio.sleep(backoff_ms / 1000)
                backoff_ms = min(backoff_ms * 2, _MAX_LOAD_RETRY_BACKOFF_MS)
        finally:
            if self._loading.get(partition) is asyncio.current_task():
                del self._loading[partition]

    async def _load_once(self, partition: int, epoch: int) -> None:
        """Replay the log (the last value of each id wins, tombstones remove), then own it."""
        started = time.monotonic()
        chunks = [bytes(batch) async for batch in self._reader.read_txn_log(partition)]
        ids = transaction_log.load(b"".join(chunks), on_unreadable=lambda reason: self._log.warning(
            "skipped an unreadable record of %s-%d: %s", TRANSACTION_STATE_TOPIC, partition, reason))
        self._loaded[partition] = ids
        self._log.info("loaded %s-%d at coordinator epoch %d: %d transactional ids in %.3f s",
                       TRANSACTION_STATE_TOPIC, partition, epoch, len(ids), time.monotonic() - started)
        self._on_loaded(partition, epoch, ids)
