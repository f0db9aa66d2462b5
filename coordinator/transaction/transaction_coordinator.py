"""The transaction coordinator of one broker (KIP-98): the `__transaction_state` partitions this
broker leads, the transactional ids they hold, and the requests about them.

It runs in the broker's front end, as the group coordinator does, so a transactional client's
requests cost no Ray call. The decisions are the pure core's (`transaction_requests.py` over
`TransactionMetadata`); this class looks the id up, writes each transition to its
`__transaction_state` partition (acks=all) before applying it and answering, and hands ended
transactions to the marker sender (`transaction_markers.py`). Ownership follows Kafka's
`TransactionStateManager` (`transaction_partitions.py`): a partition led here is loaded from
its log in the background (COORDINATOR_LOAD_IN_PROGRESS meanwhile), a transactional id of any
other partition is NOT_COORDINATOR; the coordinator epoch of a partition is its leader epoch,
and a load resumes the transactions left between PREPARE and COMPLETE.

Timers (Kafka's): every `transaction.abort.timed.out.transaction.cleanup.interval.ms` the
transactions open past their timeout are fenced and aborted; every
`transaction.remove.expired.transaction.cleanup.interval.ms` the ids idle past
`transactional.id.expiration.ms` are removed (a tombstone).

Not thread-safe: it runs on the front end's event loop; each await on a write lets other
requests in, which the metadata's pending state answers CONCURRENT_TRANSACTIONS.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Awaitable, Callable, Iterable, Protocol

from rafka.common.config import BrokerConfig
from rafka.common.errors import ErrorCode
from rafka.common.logging_util import Prefixed
from rafka.common.types import TopicPartition
from rafka.coordinator.transaction import transaction_log, transaction_requests as requests
from rafka.coordinator.transaction.transaction_log import TRANSACTION_STATE_TOPIC
from rafka.coordinator.transaction.transaction_markers import MarkerSender, MarkerWriter
from rafka.coordinator.transaction.transaction_partitions import TxnLogReader, TxnPartitions
from rafka.coordinator.transaction.transaction_metadata import TransactionMetadata, TransactionState, TxnTransitMetadata

log = logging.getLogger(__name__)

# How a failed write to __transaction_state is answered (Kafka's TransactionStateManager.appendTransactionToLog).
_APPEND_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


@dataclass(frozen=True)
class TxnSettings:
    """The broker configs the transaction coordinator applies (Kafka's names in the comments)."""

    partitions: int = 50                          # transaction.state.log.num.partitions
    replication_factor: int = 3                   # transaction.state.log.replication.factor (capped at live brokers)
    min_isr: int = 2                              # transaction.state.log.min.isr (capped at the replication factor)
    segment_bytes: int = 104_857_600              # transaction.state.log.segment.bytes
    max_timeout_ms: int = 900_000                 # transaction.max.timeout.ms
    abort_interval_ms: int = 10_000               # transaction.abort.timed.out.transaction.cleanup.interval.ms
    remove_expired_interval_ms: int = 3_600_000   # transaction.remove.expired.transaction.cleanup.interval.ms
    id_expiration_ms: int = 604_800_000           # transactional.id.expiration.ms
    verification_enable: bool = True              # transaction.partition.verification.enable
    write_timeout_ms: int = 30_000                # request.timeout.ms: a write to the log, a marker
    load_retry_backoff_ms: int = 200              # first wait before a failed load is retried (rafka's own)

    @classmethod
    def from_config(cls, config: BrokerConfig) -> "TxnSettings":
        return cls(partitions=config.transaction_state_log_num_partitions,
                   replication_factor=config.transaction_state_log_replication_factor,
                   min_isr=config.transaction_state_log_min_isr,
                   segment_bytes=config.transaction_state_log_segment_bytes,
                   max_timeout_ms=config.transaction_max_timeout_ms,
                   abort_interval_ms=config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
                   remove_expired_interval_ms=config.transaction_remove_expired_transaction_cleanup_interval_ms,
                   id_expiration_ms=config.transactional_id_expiration_ms,
                   verification_enable=config.transaction_partition_verification_enable)

    def topic_configs(self) -> dict[str, str]:
        """`__transaction_state`'s topic configs, as Kafka's `TransactionStateManager` sets them
        (min.insync.replicas is capped at the replication factor when the topic is created)."""
        return {"cleanup.policy": "compact", "compression.type": "uncompressed",
                "min.insync.replicas": str(self.min_isr), "segment.bytes": str(self.segment_bytes),
                "unclean.leader.election.enable": "false"}


class TransactionStorage(MarkerWriter, TxnLogReader, Protocol):
    """The `__transaction_state` partitions led here, and the partitions' leaders for markers."""

    async def append_txn_log(self, partition: int, batch: bytes) -> ErrorCode:
        """Append one batch with acks=all; the error of the write."""


class TransactionCoordinator:
    """One broker's transaction coordinator (see the module docstring)."""

    def __init__(self, broker_id: int, settings: TxnSettings, storage: TransactionStorage,
                 new_producer_id: Callable[[], Awaitable[int | None]],
                 clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.broker_id = broker_id
        self.settings = settings
        self._storage = storage
        self._new_producer_id = new_producer_id
        self._clock_ms = clock_ms
        self._log = Prefixed(log, f"[TransactionCoordinator broker={broker_id}]")
        self._tasks: list[asyncio.Task] = []
        self.markers = MarkerSender(storage, settings.write_timeout_ms, self._log)
        self.partitions = TxnPartitions(settings.partitions, storage, self._resume,
                                        load_retry_backoff_ms=settings.load_retry_backoff_ms, log=self._log)

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> None:
        """Start the timers (call from the running loop)."""
        if not self._tasks:
            self._tasks = [asyncio.ensure_future(self._every(self.settings.abort_interval_ms, self.abort_timed_out)),
                           asyncio.ensure_future(self._every(self.settings.remove_expired_interval_ms,
                                                             self.remove_expired))]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        self._tasks = []
        self.partitions.stop()
        self.markers.stop()

    async def _every(self, interval_ms: int, step: Callable[[], Awaitable[int]]) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await step()
            except Exception:  # noqa: BLE001 - one bad round must not stop the timer
                self._log.exception("transaction coordinator timer failed")

    # -- ownership (TxnPartitions) ---------------------------------------------------------
    def partition_for(self, transactional_id: str) -> int:
        return self.partitions.partition_for(transactional_id)

    def set_led_partitions(self, partitions: dict[int, int]) -> None:
        """The `__transaction_state` partitions led here, each with its leader epoch (the
        coordinator epoch): loaded in the background, the lost ones forgotten."""
        self.partitions.set_led(partitions)

    def check(self, transactional_id: str) -> ErrorCode:
        """NONE when this broker coordinates `transactional_id` and has loaded it."""
        return self.partitions.check(transactional_id)

    def _owner(self, partition: int, epoch: int) -> bool:
        return self.partitions.owner(partition, epoch)

    def _resume(self, partition: int, epoch: int, ids: dict[str, TransactionMetadata]) -> None:
        """A partition is loaded: complete the transactions it left between PREPARE and
        COMPLETE (their coordinator moved or restarted), as Kafka's load does."""
        now = self._clock_ms()
        for txn_id, meta in ids.items():
            transit = requests.resume_after_load(meta, now)
            if transit is not None:
                commit = meta.state is TransactionState.PREPARE_COMMIT
                self._log.info("resuming the %s of %s after a load", "commit" if commit else "abort", txn_id)
                self._send_markers(partition, epoch, txn_id, meta, transit, commit)

    def _lookup(self, transactional_id: str) -> tuple[ErrorCode, TransactionMetadata | None, int, int]:
        """(error, metadata or None when unknown, partition, coordinator epoch)."""
        code = self.check(transactional_id)
        partition = self.partition_for(transactional_id)
        if code is not ErrorCode.NONE:
            return code, None, partition, -1
        return (ErrorCode.NONE, self.partitions.ids(partition).get(transactional_id), partition,
                self.partitions.epoch(partition))

    # -- the log ---------------------------------------------------------------------
    async def _write(self, partition: int, epoch: int, txn_id: str, meta: TransactionMetadata,
                     transit: TxnTransitMetadata) -> ErrorCode:
        """Append `transit`, then apply it (NONE); on a failure the pending state is cleared and
        the error is answered as Kafka maps it. A coordinator that lost the partition meanwhile
        applies nothing and answers NOT_COORDINATOR."""
        batch = transaction_log.encode_transaction_batch(txn_id, transit, self._clock_ms())
        try:
            code = await asyncio.wait_for(self._storage.append_txn_log(partition, batch),
                                          self.settings.write_timeout_ms / 1000)
        except asyncio.TimeoutError:
            code = ErrorCode.REQUEST_TIMED_OUT
        except Exception as e:  # noqa: BLE001 - a lost replica: the write failed
            self._log.warning("writing %s to %s-%d failed: %r", txn_id, TRANSACTION_STATE_TOPIC, partition, e)
            code = ErrorCode.UNKNOWN_SERVER_ERROR
        if code is ErrorCode.NONE and not (self._owner(partition, epoch)
                                           and self.partitions.ids(partition).get(txn_id) is meta):
            return ErrorCode.NOT_COORDINATOR
        if code is not ErrorCode.NONE:
            self._log.warning("could not write %s to %s-%d: %s", txn_id, TRANSACTION_STATE_TOPIC, partition,
                              code.name)
            meta.pending_state = None
            return _APPEND_ERRORS.get(code, code)
        meta.complete_transition_to(transit)
        return ErrorCode.NONE

    # -- InitProducerId ----------------------------------------------------------------
    async def init_producer_id(self, transactional_id: str, txn_timeout_ms: int,
                               expected: requests.ExpectedProducer | None) -> tuple[ErrorCode, int, int]:
        """(error, producer id, epoch) for a transactional producer (Kafka's
        `handleInitProducerId`): a new id for an unknown transactional id; the next epoch
        otherwise; an open transaction is aborted first (CONCURRENT_TRANSACTIONS: retry)."""
        failed = (-1, -1)
        code = requests.check_init_request(transactional_id, txn_timeout_ms, self.settings.max_timeout_ms)
        if code is not ErrorCode.NONE:
            return (code, *failed)
        code, meta, partition, epoch = self._lookup(transactional_id)
        if code is not ErrorCode.NONE:
            return (code, *failed)
        if meta is None:
            producer_id = await self._new_producer_id()
            if producer_id is None:
                return (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, *failed)   # no id block: retriable
            code, meta, partition, epoch = self._lookup(transactional_id)
            if code is not ErrorCode.NONE:
                return (code, *failed)
            if meta is None:
                meta = requests.new_metadata(transactional_id, producer_id, txn_timeout_ms, self._clock_ms())
                self.partitions.ids(partition)[transactional_id] = meta
        spare_id = None
        if meta.is_producer_epoch_exhausted and not meta.pending_transition_in_progress:
            spare_id = await self._new_producer_id()
            if spare_id is None:
                return (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, *failed)
        result = requests.init_producer_id(meta, txn_timeout_ms, expected, lambda: spare_id,
                                           self._clock_ms())
        if isinstance(result, ErrorCode):
            return (result, *failed)
        if result.txn_state is TransactionState.PREPARE_EPOCH_FENCE:
            code = await self._end(transactional_id, result.producer_id, result.producer_epoch, False,
                                   from_client=False)
            return (code if code is not ErrorCode.NONE else ErrorCode.CONCURRENT_TRANSACTIONS, *failed)
        code = await self._write(partition, epoch, transactional_id, meta, result)
        if code is not ErrorCode.NONE:
            return (code, *failed)
        self._log.info("initialized %s: producer id %d epoch %d", transactional_id, meta.producer_id,
                       meta.producer_epoch)
        return ErrorCode.NONE, meta.producer_id, meta.producer_epoch

    # -- AddPartitionsToTxn, AddOffsetsToTxn, verification ---------------------------------
    async def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: Iterable[TopicPartition]) -> ErrorCode:
        """Add the partitions to the producer's transaction, starting one when none is open."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        code, meta, partition, epoch = self._lookup(transactional_id)
        if code is not ErrorCode.NONE:
            return code
        result = requests.add_partitions(meta, producer_id, producer_epoch, partitions, self._clock_ms())
        if isinstance(result, ErrorCode):
            return result
        return await self._write(partition, epoch, transactional_id, meta, result)

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Iterable[TopicPartition]) -> ErrorCode | dict[TopicPartition, ErrorCode]:
        """KIP-890's verify-only check: each partition NONE when it is in the producer's
        ongoing transaction, TRANSACTION_ABORTABLE when not; or one error for all."""
        code, meta, _, _ = self._lookup(transactional_id)
        if code is not ErrorCode.NONE:
            return code
        return requests.verify_partitions(meta, producer_id, producer_epoch, partitions)

    # -- EndTxn ------------------------------------------------------------------------
    async def end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                              commit: bool) -> ErrorCode:
        """EndTxn: PREPARE written, then answered; the markers and COMPLETE follow."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        return await self._end(transactional_id, producer_id, producer_epoch, commit, from_client=True)

    async def _end(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool, *,
                   from_client: bool) -> ErrorCode:
        code, meta, partition, epoch = self._lookup(transactional_id)
        if code is not ErrorCode.NONE:
            return code
        fencing = meta is not None and meta.pending_state is TransactionState.PREPARE_EPOCH_FENCE
        result = requests.end_transaction(meta, producer_id, producer_epoch, commit, self._clock_ms(),
                                          from_client=from_client)
        if isinstance(result, ErrorCode):
            if fencing and meta.pending_state is TransactionState.PREPARE_EPOCH_FENCE:
                meta.pending_state = None
            return result
        code = await self._write(partition, epoch, transactional_id, meta, result)
        if code is not ErrorCode.NONE:
            if fencing:
                meta.has_failed_epoch_fence = True   # the next fence reuses the epoch never handed out
            return code
        meta.has_failed_epoch_fence = False
        complete = requests.complete_after_prepare(meta, meta.producer_id, meta.producer_epoch, commit,
                                                   self._clock_ms())
        if isinstance(complete, ErrorCode):
            return complete
        self._send_markers(partition, epoch, transactional_id, meta, complete, commit)
        return ErrorCode.NONE

    def _send_markers(self, partition: int, epoch: int, txn_id: str, meta: TransactionMetadata,
                      complete: TxnTransitMetadata, commit: bool) -> None:
        async def write_complete() -> ErrorCode:
            if not self._owner(partition, epoch) or self.partitions.ids(partition).get(txn_id) is not meta:
                return ErrorCode.NOT_COORDINATOR
            meta.pending_state = complete.txn_state   # (a failed attempt cleared it)
            return await self._write(partition, epoch, txn_id, meta, complete)

        self.markers.send(txn_id, meta.producer_id, meta.producer_epoch, epoch, commit,
                          frozenset(meta.topic_partitions), still_owner=lambda: self._owner(partition, epoch),
                          write_complete=write_complete)

    # -- timers ------------------------------------------------------------------------
    async def abort_timed_out(self) -> int:
        """Fence and abort every transaction open past its timeout; how many were started."""
        now = self._clock_ms()
        started = 0
        for _, _, metas in self.partitions.loaded():
            for txn_id, meta in list(metas.items()):
                fence = requests.abort_timed_out(meta, now)
                if fence is None:
                    continue
                self._log.info("aborting %s: open for more than its timeout of %d ms", txn_id, meta.txn_timeout_ms)
                started += 1
                code = await self._end(txn_id, fence.producer_id, fence.producer_epoch, False, from_client=False)
                if code is not ErrorCode.NONE:
                    self._log.warning("could not abort timed-out %s: %s", txn_id, code.name)
        return started

    async def remove_expired(self) -> int:
        """Remove the transactional ids idle past transactional.id.expiration.ms (a tombstone
        each, as Kafka's `removeExpiredTransactionalIds`); how many were removed."""
        now = self._clock_ms()
        removed = 0
        for partition, epoch, metas in self.partitions.loaded():
            for txn_id, meta in list(metas.items()):
                if not meta.is_expired(now, self.settings.id_expiration_ms):
                    continue
                meta.prepare_dead()
                try:
                    code = await self._storage.append_txn_log(partition, transaction_log.tombstone_batch(txn_id, now))
                except Exception:  # noqa: BLE001 - tried again next round
                    code = ErrorCode.UNKNOWN_SERVER_ERROR
                meta.pending_state = None
                if code is ErrorCode.NONE and self._owner(partition, epoch) and metas.get(txn_id) is meta:
                    del metas[txn_id]
                    removed += 1
        return removed

    # -- admin -------------------------------------------------------------------------
    def transactions(self) -> list[tuple[str, TransactionMetadata]]:
        """Every transactional id loaded here with its metadata (ListTransactions)."""
        return [(txn_id, meta) for _, _, metas in self.partitions.loaded() for txn_id, meta in metas.items()]


__all__ = ["TransactionCoordinator", "TransactionStorage", "TxnSettings"]
