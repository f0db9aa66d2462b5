"""The transaction coordinator's marker sender (Kafka's `TransactionMarkerChannelManager`):
once PrepareCommit or PrepareAbort is written, a COMMIT or ABORT marker goes to the leader of
every partition of the transaction, each retried until written; then CompleteCommit or
CompleteAbort is written to `__transaction_state`.

Writing a marker twice is harmless (a partition's leader answers a retried marker NONE), so a
sender resumed after a coordinator failover simply sends them all again. A partition whose
topic is gone is dropped (UNKNOWN_TOPIC_OR_PARTITION from `MarkerWriter`, which says so only
when the topic is not in the metadata). INVALID_PRODUCER_EPOCH and
TRANSACTION_COORDINATOR_FENCED stop the sending, as Kafka's completion handler does: a newer
coordinator or producer epoch owns the transaction. A sender whose coordinator lost the
`__transaction_state` partition stops too; the new coordinator resumes from the log.

Runs on the front end's event loop, one task per transactional id being completed.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable, Protocol

from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition

# A partition whose marker could not be written is tried again after this, doubling up to the cap.
RETRY_BACKOFF_MS = 100
MAX_RETRY_BACKOFF_MS = 2000
_STOP = (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED)
_DONE = (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


class MarkerWriter(Protocol):
    async def write_markers(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                            partitions: frozenset[TopicPartition],
                            timeout_ms: int) -> dict[TopicPartition, ErrorCode]:
        """Each partition's marker written by its leader (a local replica or another broker);
        every partition answered. UNKNOWN_TOPIC_OR_PARTITION only for a topic that is gone."""


def remaining_after(partitions: frozenset[TopicPartition],
                    results: dict[TopicPartition, ErrorCode]) -> tuple[frozenset[TopicPartition], ErrorCode | None]:
    """The partitions still without a marker after one round, and the error that stops the
    sending (None: go on). A partition missing from `results` is tried again."""
    stop = next((code for code in results.values() if code in _STOP), None)
    left = frozenset(tp for tp in partitions if results.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR) not in _DONE)
    return left, stop


class MarkerSender:
    """Completes ended transactions: markers to every partition, then the COMPLETE write."""

    def __init__(self, writer: MarkerWriter, timeout_ms: int, log: logging.LoggerAdapter) -> None:
        self._writer = writer
        self._timeout_ms = timeout_ms
        self._log = log
        self._sending: dict[str, asyncio.Task] = {}

    def pending(self) -> set[str]:
        """The transactional ids whose markers are being sent."""
        return set(self._sending)

    def stop(self) -> None:
        for task in self._sending.values():
            task.cancel()
        self._sending.clear()

    def send(self, txn_id: str, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
             partitions: frozenset[TopicPartition], *, still_owner: Callable[[], bool],
             write_complete: Callable[[], Awaitable[ErrorCode]]) -> None:
        """Start completing `txn_id`'s transaction in the background."""
        task = asyncio.ensure_future(self._complete(txn_id, producer_id, producer_epoch, coordinator_epoch, commit,
                                                    partitions, still_owner, write_complete))
        self._sending[txn_id] = task

        def done(t: asyncio.Task) -> None:
            if self._sending.get(txn_id) is t:
                del self._sending[txn_id]
            if not t.cancelled() and t.exception() is not None:
                self._log.error("completing the transaction of %s failed", txn_id, exc_info=t.exception())

        task.add_done_callback(done)

    async def _complete(self, txn_id: str, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                        commit: bool, partitions: frozenset[TopicPartition], still_owner: Callable[[], bool],
                        write_complete: Callable[[], Awaitable[ErrorCode]]) -> None:
        backoff_ms = RETRY_BACKOFF_MS
        left = partitions
        while left:
            if not still_owner():
                self._log.info("no longer the coordinator of %s: its markers are left to the new one", txn_id)
                return
            try:
                results = await self._writer.write_markers(producer_id, producer_epoch, coordinator_epoch, commit,
                                                           left, self._timeout_ms)
            except Exception as e:  # noqa: BLE001 - every partition is tried again
                self._log.warning("writing markers of %s failed: %r", txn_id, e)
                results = {}
            left, stop = remaining_after(left, results)
            if stop is not None:
                self._log.warning("stopped sending the markers of %s: %s", txn_id, stop.name)
                return
            if left:
                self._log.debug("markers of %s not written yet: %s", txn_id, sorted(left))
                await asyncio.sleep(backoff_ms / 1000)
                backoff_ms = min(backoff_ms * 2, MAX_RETRY_BACKOFF_MS)
        backoff_ms = RETRY_BACKOFF_MS
        while True:
            code = await write_complete()
            if code is ErrorCode.NONE:
                self._log.debug("completed the transaction of %s (%s)", txn_id, "commit" if commit else "abort")
                return
            if code is ErrorCode.NOT_COORDINATOR:
                return
            self._log.warning("could not write the completion of %s: %s; retrying", txn_id, code.name)
            await asyncio.sleep(backoff_ms / 1000)
            backoff_ms = min(backoff_ms * 2, MAX_RETRY_BACKOFF_MS)


__all__ = ["MarkerSender", "MarkerWriter", "remaining_after"]
