"""What compaction does with transactions (Kafka 3.9's `CleanedTransactionMetadata` and the
transaction half of `LogCleaner`'s batch filter): the pure decisions, for the cleaner to apply.

The cleaner walks the batches of the segments it cleans in offset order and asks, per batch,
whether it may be discarded:

- a transactional data batch of an *aborted* transaction (one whose `.txnindex` entry, from
  `PartitionLog.aborted_transactions` over the cleaned range, started at or before the batch):
  yes, records and all (it is also left out of the key -> offset map);
- a transactional data batch of any other transaction: no, and its producer's next COMMIT
  marker must stay while such batches remain;
- an ABORT marker: only once no batch of its transaction was met in this pass (they were all
  removed by an earlier pass); while some were met the marker stays and its index entry is
  kept for the cleaned segment (`retained_aborts`);
- a COMMIT marker: only when no batch of its transaction was met in this pass;
- an empty control batch (already emptied by an earlier pass): yes.

A marker that may go is not dropped at once: as for tombstones (KIP-534), its batch first gets
a delete horizon (now + delete.retention.ms), so a read_committed consumer that has read the
transaction's data sees its marker; a later pass past the horizon removes it
(`discard_batch_records`). The cleaner still keeps (emptied) the batch that holds an active
producer's last sequence or epoch, as for idempotent producers.

Not safe for concurrent use: one cleaning owns one.
"""
from __future__ import annotations

import heapq

from rafka.partition_worker.control_records import ControlRecordType
from rafka.partition_worker.record_batch import BatchHeader
from rafka.partition_worker.txn_index import AbortedTxn


class CleanedTransactions:
    """Transactions seen so far in one cleaning pass (Kafka's `CleanedTransactionMetadata`)."""

    def __init__(self) -> None:
        self._ongoing_committed: set[int] = set()
        # producer id -> (its aborted transaction, whether one of its batches was met)
        self._ongoing_aborted: dict[int, tuple[AbortedTxn, bool]] = {}
        self._aborted: list[tuple[int, int, AbortedTxn]] = []   # min-heap by first offset
        self._seq = 0
        self.retained_aborts: list[AbortedTxn] = []            # index entries of the cleaned segment

    def add_aborted_transactions(self, aborted: list[AbortedTxn]) -> None:
        """Aborted transactions of the range about to be read (from the log's `.txnindex`)."""
        for txn in aborted:
            heapq.heappush(self._aborted, (txn.first_offset, self._seq, txn))
            self._seq += 1

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self._aborted and self._aborted[0][0] <= offset:
            _, _, txn = heapq.heappop(self._aborted)
            self._ongoing_aborted.setdefault(txn.producer_id, (txn, False))

    def on_batch_read(self, header: BatchHeader) -> bool:
        """A data batch: True when it belongs to an aborted transaction (discard it)."""
        self._consume_aborted_up_to(header.last_offset)
        if not header.is_transactional:
            return False
        aborted = self._ongoing_aborted.get(header.producer_id)
        if aborted is not None:
            self._ongoing_aborted[header.producer_id] = (aborted[0], True)
            return True
        self._ongoing_committed.add(header.producer_id)
        return False

    def on_control_batch_read(self, header: BatchHeader, control_type: int | None) -> bool:
        """A control batch whose first record has `control_type` (None: no record): True when
        the marker may be removed (once its delete horizon has passed)."""
        self._consume_aborted_up_to(header.last_offset)
        if control_type is None:
            return True
        producer_id = header.producer_id
        if control_type == ControlRecordType.ABORT:
            aborted = self._ongoing_aborted.pop(producer_id, None)
            if aborted is not None and aborted[1]:
                self.retained_aborts.append(aborted[0])
                return False
            return True
        if control_type == ControlRecordType.COMMIT:
            if producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(producer_id)
                return False
            return True
        return False


def discard_batch_records(header: BatchHeader, can_discard: bool, now_ms: int) -> bool:
    """Whether a batch's records go (Kafka's `discardBatchRecords`): a data batch when
    `can_discard`; a marker only when also past the delete horizon its batch carries."""
    if not header.is_control:
        return can_discard
    horizon = header.delete_horizon_ms
    return can_discard and horizon is not None and horizon <= now_ms


__all__ = ["CleanedTransactions", "discard_batch_records"]
