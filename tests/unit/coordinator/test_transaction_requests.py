"""The transaction coordinator's answers (Kafka 3.9's TransactionCoordinator checks, in its
order), driven through whole transactions: init, add, commit/abort, fencing a zombie,
KIP-360 retries, timeouts, and a reload of __transaction_state between PREPARE and COMPLETE."""
from __future__ import annotations

import pytest
from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.coordinator.transaction import transaction_log as tl
from rafka.coordinator.transaction import transaction_requests as tr
from rafka.coordinator.transaction.transaction_metadata import (
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
)
from rafka.coordinator.transaction.transaction_requests import ExpectedProducer
from rafka.partition_worker.record_batch import encode_batch, Record

S = TransactionState
E = ErrorCode
NOW = 1_700_000_000_000
TP0, TP1 = TopicPartition("out", 0), TopicPartition("out", 1)


class Coordinator:
    """The I/O shell's part, minimal: every transit is 'written' to a log of records (the real
    codec's bytes) and then completed, as the front end will do after an acks=all append."""

    def __init__(self) -> None:
        self.cache: dict[str, TransactionMetadata] = {}
        self.records: list[tuple[bytes, bytes]] = []
        self.next_id = 1000

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def write(self, meta: TransactionMetadata, transit: TxnTransitMetadata) -> None:
        self.records.append((tl.key_bytes(meta.transactional_id), tl.value_bytes(transit)))
        meta.complete_transition_to(transit)

    def init(self, txn_id: str, expected: ExpectedProducer | None = None, now: int = NOW) -> ErrorCode | tuple[int, int]:
        meta = self.cache.get(txn_id)
        if meta is None:
            meta = self.cache[txn_id] = tr.new_metadata(txn_id, self.new_id(), 60_000, now)
        result = tr.init_producer_id(meta, 60_000, expected, self.new_id, now)
        if isinstance(result, ErrorCode):
            return result
        if result.txn_state is S.PREPARE_EPOCH_FENCE:
            ended = tr.end_transaction(meta, result.producer_id, result.producer_epoch, False, now, from_client=False)
            assert isinstance(ended, TxnTransitMetadata)
            self.write(meta, ended)
            self.write(meta, tr.complete_after_prepare(meta, result.producer_id, result.producer_epoch, False, now))
            return E.CONCURRENT_TRANSACTIONS
        self.write(meta, result)
        return meta.producer_id, meta.producer_epoch

    def add(self, txn_id: str, pid: int, epoch: int, *tps: TopicPartition) -> ErrorCode:
        result = tr.add_partitions(self.cache.get(txn_id), pid, epoch, tps, NOW)
        if isinstance(result, ErrorCode):
            return result
        self.write(self.cache[txn_id], result)
        return E.NONE

    def end(self, txn_id: str, pid: int, epoch: int, commit: bool) -> ErrorCode:
        meta = self.cache.get(txn_id)
        result = tr.end_transaction(meta, pid, epoch, commit, NOW)
        if isinstance(result, ErrorCode):
            return result
        self.write(meta, result)
        complete = tr.complete_after_prepare(meta, pid, epoch, commit, NOW)
        assert isinstance(complete, TxnTransitMetadata)
        self.write(meta, complete)      # after every partition's marker
        return E.NONE

    def log_bytes(self) -> bytes:
        return b"".join(encode_batch([Record(0, NOW, k, v)]) for k, v in self.records)


def test_init_checks_the_id_and_the_timeout_first():
    assert tr.check_init_request("", 1000, 900_000) is E.INVALID_REQUEST
    assert tr.check_init_request("t", 900_001, 900_000) is E.INVALID_TRANSACTION_TIMEOUT
    assert tr.check_init_request("t", 60_000, 900_000) is E.NONE


def test_commit_then_abort_then_retries():
    c = Coordinator()
    pid, epoch = c.init("t")
    assert epoch == 0
    assert c.add("t", pid, epoch, TP0) is E.NONE
    assert c.add("t", pid, epoch, TP0) is E.NONE          # already in: nothing written
    assert len(c.records) == 2
    assert c.end("t", pid, epoch, commit=True) is E.NONE
    assert c.cache["t"].state is S.COMPLETE_COMMIT
    assert tr.end_transaction(c.cache["t"], pid, epoch, True, NOW) is E.NONE           # retried
    assert tr.end_transaction(c.cache["t"], pid, epoch, False, NOW) is E.INVALID_TXN_STATE
    assert c.add("t", pid, epoch, TP1) is E.NONE
    assert c.end("t", pid, epoch, commit=False) is E.NONE
    assert c.cache["t"].state is S.COMPLETE_ABORT


def test_end_txn_without_a_transaction_is_invalid_txn_state():
    c = Coordinator()
    pid, epoch = c.init("t")
    assert tr.end_transaction(c.cache["t"], pid, epoch, True, NOW) is E.INVALID_TXN_STATE


@pytest.mark.parametrize("pid_delta,epoch_delta,expected", [
    (1, 0, E.INVALID_PRODUCER_ID_MAPPING), (0, -1, E.PRODUCER_FENCED), (0, 1, E.PRODUCER_FENCED),
])
def test_add_and_end_check_the_producer(pid_delta, epoch_delta, expected):
    c = Coordinator()
    pid, epoch = c.init("t")
    c.init("t")                                              # epoch 1 now
    pid, epoch = c.cache["t"].producer_id, c.cache["t"].producer_epoch
    assert c.add("t", pid + pid_delta, epoch + epoch_delta, TP0) is expected
    c.add("t", pid, epoch, TP0)
    assert tr.end_transaction(c.cache["t"], pid + pid_delta, epoch + epoch_delta, True, NOW) is expected


def test_unknown_transactional_id_is_invalid_producer_id_mapping():
    assert tr.add_partitions(None, 1, 0, [TP0], NOW) is E.INVALID_PRODUCER_ID_MAPPING
    assert tr.end_transaction(None, 1, 0, True, NOW) is E.INVALID_PRODUCER_ID_MAPPING
    assert tr.verify_partitions(None, 1, 0, [TP0]) is E.INVALID_PRODUCER_ID_MAPPING


def test_a_new_instance_fences_the_zombie_and_aborts_its_transaction():
    c = Coordinator()
    pid, zombie_epoch = c.init("t")
    c.add("t", pid, zombie_epoch, TP0, TP1)
    assert c.init("t") is E.CONCURRENT_TRANSACTIONS          # the open transaction is aborted first
    meta = c.cache["t"]
    assert meta.state is S.COMPLETE_ABORT and meta.producer_epoch == zombie_epoch + 1
    assert c.init("t") == (pid, zombie_epoch + 2)            # the retry gets the next epoch
    assert c.add("t", pid, zombie_epoch, TP0) is E.PRODUCER_FENCED
    assert tr.end_transaction(meta, pid, zombie_epoch, True, NOW) is E.PRODUCER_FENCED


def test_a_pending_transition_answers_concurrent_transactions():
    c = Coordinator()
    pid, epoch = c.init("t")
    meta = c.cache["t"]
    meta.prepare_add_partitions({TP0}, NOW)                  # a write in flight
    assert c.add("t", pid, epoch, TP1) is E.CONCURRENT_TRANSACTIONS
    assert c.init("t") is E.CONCURRENT_TRANSACTIONS
    assert tr.end_transaction(meta, pid, epoch, True, NOW) is E.CONCURRENT_TRANSACTIONS


def test_ending_while_ending_is_concurrent_and_the_other_outcome_invalid():
    c = Coordinator()
    pid, epoch = c.init("t")
    c.add("t", pid, epoch, TP0)
    meta = c.cache["t"]
    meta.complete_transition_to(tr.end_transaction(meta, pid, epoch, True, NOW))     # PrepareCommit
    assert tr.end_transaction(meta, pid, epoch, True, NOW) is E.CONCURRENT_TRANSACTIONS
    assert tr.end_transaction(meta, pid, epoch, False, NOW) is E.INVALID_TXN_STATE
    assert c.add("t", pid, epoch, TP1) is E.CONCURRENT_TRANSACTIONS
    assert c.init("t") is E.CONCURRENT_TRANSACTIONS


def test_kip360_retry_with_the_current_epoch_bumps_and_an_old_pid_is_fenced():
    c = Coordinator()
    pid, epoch = c.init("t")
    assert c.init("t", ExpectedProducer(pid, epoch)) == (pid, epoch + 1)
    assert c.init("t", ExpectedProducer(pid, epoch)) == (pid, epoch + 1)     # a retry of that bump
    assert c.init("t", ExpectedProducer(pid + 7, 0)) is E.PRODUCER_FENCED


def test_an_exhausted_epoch_rotates_the_producer_id():
    c = Coordinator()
    pid, _ = c.init("t")
    c.cache["t"].producer_epoch = 32766
    new_pid, epoch = c.init("t", ExpectedProducer(pid, 32766))
    assert new_pid != pid and epoch == 0 and c.cache["t"].last_producer_epoch == 32766
    # the retry of that rotation, with the old id and its exhausted epoch, is not fenced
    retry = tr.init_producer_id(c.cache["t"], 60_000, ExpectedProducer(pid, 32766), c.new_id, NOW)
    assert (retry.producer_id, retry.producer_epoch) == (new_pid, 0)


def test_verify_only_reports_each_partition():
    c = Coordinator()
    pid, epoch = c.init("t")
    c.add("t", pid, epoch, TP0)
    assert tr.verify_partitions(c.cache["t"], pid, epoch, [TP0, TP1]) == {TP0: E.NONE, TP1: E.TRANSACTION_ABORTABLE}
    assert tr.verify_partitions(c.cache["t"], pid, epoch + 1, [TP0]) is E.PRODUCER_FENCED


def test_a_timed_out_transaction_is_fenced_and_aborted_by_the_coordinator():
    c = Coordinator()
    pid, epoch = c.init("t")
    c.add("t", pid, epoch, TP0)
    meta = c.cache["t"]
    assert tr.abort_timed_out(meta, NOW + 60_000) is None
    fence = tr.abort_timed_out(meta, NOW + 60_001)
    ended = tr.end_transaction(meta, fence.producer_id, fence.producer_epoch, False, NOW + 60_001, from_client=False)
    c.write(meta, ended)
    assert meta.state is S.PREPARE_ABORT and meta.producer_epoch == epoch + 1
    assert c.add("t", pid, epoch, TP1) is E.PRODUCER_FENCED


def test_a_reload_between_prepare_and_complete_resumes_the_markers():
    c = Coordinator()
    pid, epoch = c.init("t")
    c.add("t", pid, epoch, TP0, TP1)
    meta = c.cache["t"]
    c.write(meta, tr.end_transaction(meta, pid, epoch, True, NOW))    # PrepareCommit written, then the broker dies
    c.init("other")
    loaded = tl.load(c.log_bytes())
    assert set(loaded) == {"t", "other"}
    again = loaded["t"]
    assert (again.state, again.producer_id, again.producer_epoch, again.topic_partitions) == (
        S.PREPARE_COMMIT, pid, epoch, {TP0, TP1})
    complete = tr.resume_after_load(again, NOW)
    assert complete.txn_state is S.COMPLETE_COMMIT
    assert tr.resume_after_load(loaded["other"], NOW) is None


def test_load_applies_tombstones_and_skips_unknown_keys_and_reports_bad_values():
    c = Coordinator()
    c.init("gone")
    c.init("kept")
    c.records.append((tl.key_bytes("gone"), None))
    c.records.append((b"\x00\x05junk", b"x"))                           # a newer key version
    assert set(tl.load(c.log_bytes())) == {"kept"}
    c.records.append((tl.key_bytes("bad"), b"\x00\x00\x01"))
    with pytest.raises(tl.TransactionLogError):
        tl.load(c.log_bytes())
    seen: list[str] = []
    assert set(tl.load(c.log_bytes(), on_unreadable=seen.append)) == {"kept"} and len(seen) == 1
