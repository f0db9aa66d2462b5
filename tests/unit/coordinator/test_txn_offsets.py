"""Offsets committed in transactions (TxnOffsetCommit): held per producer until the marker on
the group's `__consumer_offsets` partition, validated as Kafka validates them (KIP-447), and
made visible by COMMIT only; the sequence numbers of the coordinator's transactional batches."""
from __future__ import annotations

import asyncio

from rafka.common.errors import ErrorCode
from rafka.coordinator.group.group_messages import CommittedOffset
from rafka.coordinator.group.txn_offsets import PendingTxnOffsets
from rafka.net.txn_verifier import produce_error
from rafka.partition_worker.record_batch import iter_batches
from tests.unit.coordinator.test_group_coordinator import GROUP, PARTITIONS, MemoryOffsets, loaded

PID, EPOCH = 4000, 3


def offset(n: int) -> CommittedOffset:
    return CommittedOffset(offset=n, leader_epoch=-1, metadata="")


def test_held_offsets_are_committed_by_commit_and_dropped_by_abort():
    pending = PendingTxnOffsets()
    pending.add(1, PID, "g", {("t", 0): offset(5)})
    pending.add(1, PID, "g", {("t", 0): offset(7), ("t", 1): offset(2)})
    pending.add(1, PID + 1, "g", {("t", 2): offset(9)})
    assert pending.has_pending("g", "t", 0) and not pending.has_pending("g", "u", 0)
    assert pending.complete(1, PID, True) == {"g": {("t", 0): offset(7), ("t", 1): offset(2)}}
    assert pending.complete(1, PID, True) == {}                 # a retried marker
    assert pending.complete(1, PID + 1, False) == {}
    assert not pending.has_pending("g", "t", 2)


def test_sequences_run_on_per_producer_and_restart_at_a_new_epoch():
    pending = PendingTxnOffsets()
    assert pending.next_sequence(0, PID, EPOCH) == 0
    pending.written(0, PID, EPOCH, 3)
    assert pending.next_sequence(0, PID, EPOCH) == 3
    assert pending.next_sequence(0, PID, EPOCH + 1) == 0
    assert pending.next_sequence(1, PID, EPOCH) == 0
    pending.unload_partition(0)
    assert pending.next_sequence(0, PID, EPOCH) == 0


def test_txn_offset_commit_writes_a_transactional_batch_and_is_visible_only_after_the_commit_marker():
    async def scenario():
        storage = MemoryOffsets()
        coordinator = await loaded(storage)
        partition = coordinator.partition_for(GROUP)
        codes = await coordinator.commit_txn_offsets(GROUP, PID, EPOCH, "", -1, None, {("t", 0): offset(11)})
        assert codes == {("t", 0): ErrorCode.NONE}
        header = next(iter(iter_batches(memoryview(storage.batches[partition][-1]))))
        assert (header.is_transactional, header.producer_id, header.producer_epoch, header.base_sequence) == \
            (True, PID, EPOCH, 0)
        assert coordinator.fetch_offsets(GROUP, [("t", 0)])[1][("t", 0)] is None
        await coordinator.commit_txn_offsets(GROUP, PID, EPOCH, "", -1, None, {("t", 0): offset(12)})
        header = next(iter(iter_batches(memoryview(storage.batches[partition][-1]))))
        assert header.base_sequence == 1
        coordinator.complete_txn_offsets(partition, PID, commit=True)
        assert coordinator.fetch_offsets(GROUP, [("t", 0)])[1][("t", 0)].offset == 12
        await coordinator.commit_txn_offsets(GROUP, PID, EPOCH, "", -1, None, {("t", 0): offset(99)})
        coordinator.complete_txn_offsets(partition, PID, commit=False)
        assert coordinator.fetch_offsets(GROUP, [("t", 0)])[1][("t", 0)].offset == 12
        await coordinator.stop()
    asyncio.run(scenario())


def test_txn_offset_commit_fences_unknown_members_and_other_generations():
    async def scenario():
        coordinator = await loaded(MemoryOffsets())
        assert await coordinator.commit_txn_offsets(GROUP, PID, EPOCH, "ghost", -1, None, {("t", 0): offset(1)}) \
            == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
        assert await coordinator.commit_txn_offsets(GROUP, PID, EPOCH, "", 5, None, {("t", 0): offset(1)}) \
            == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
        coordinator.set_led_partitions(set())
        assert await coordinator.commit_txn_offsets(GROUP, PID, EPOCH, "", -1, None, {("t", 0): offset(1)}) \
            == {("t", 0): ErrorCode.NOT_COORDINATOR}
        await coordinator.stop()
    asyncio.run(scenario())


def test_a_coordinators_verdict_is_answered_to_a_produce_as_kafka_maps_it():
    assert produce_error(ErrorCode.NONE) is ErrorCode.NONE
    assert produce_error(ErrorCode.TRANSACTION_ABORTABLE) is ErrorCode.INVALID_TXN_STATE
    assert produce_error(ErrorCode.PRODUCER_FENCED) is ErrorCode.INVALID_PRODUCER_EPOCH
    for retriable in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                      ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.CONCURRENT_TRANSACTIONS):
        assert produce_error(retriable) is ErrorCode.NOT_ENOUGH_REPLICAS
    assert produce_error(ErrorCode.INVALID_PRODUCER_ID_MAPPING) is ErrorCode.INVALID_PRODUCER_ID_MAPPING


def test_a_new_group_coordinator_holds_an_open_transactions_offsets_until_its_marker():
    """The group moves between the commit and the marker: the new coordinator loads the
    transactional batch as pending, with the producer's next sequence, and the COMMIT
    marker (here read in a later chunk of the log) makes it visible."""
    from rafka.coordinator.group import offsets_topic
    from rafka.partition_worker.control_records import ControlRecordType, EndTransactionMarker, encode_marker_batch

    async def scenario():
        storage = MemoryOffsets()
        first = await loaded(storage)
        partition = first.partition_for(GROUP)
        await first.commit_txn_offsets(GROUP, PID, EPOCH, "", -1, None, {("t", 0): offset(21)})
        await first.stop()
        second = await loaded(storage)
        assert second.txn_offsets.has_pending(GROUP, "t", 0)
        assert second.txn_offsets.next_sequence(partition, PID, EPOCH) == 1
        second.complete_txn_offsets(partition, PID, commit=True)
        assert second.fetch_offsets(GROUP, [("t", 0)])[1][("t", 0)].offset == 21
        await second.stop()
        # The marker in the next chunk of a load ends a transaction of the chunk before.
        open_transactions: dict = {}
        assert list(offsets_topic.replay(storage.batches[partition][-1], open_transactions=open_transactions)) == []
        marker = encode_marker_batch(EndTransactionMarker(ControlRecordType.COMMIT, 0), PID, EPOCH, 0)
        replayed = list(offsets_topic.replay(marker, open_transactions=open_transactions))
        assert len(replayed) == 1 and open_transactions == {}
    asyncio.run(scenario())
