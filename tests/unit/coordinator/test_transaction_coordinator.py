"""TransactionCoordinator over an in-memory `__transaction_state` and marker writer (its
`TransactionStorage` interface): ownership answers while loading and elsewhere, InitProducerId
fencing and KIP-360 bumps, an open transaction aborted before a new epoch is handed out, EndTxn
answered after PREPARE with the markers and COMPLETE after it, markers retried until written
and stopped by a newer epoch, a coordinator that takes over between PREPARE and COMPLETE
resuming the markers from the log, and timed-out transactions fenced and aborted."""
from __future__ import annotations

import asyncio
import time
from typing import Callable

from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.coordinator.transaction import transaction_log
from rafka.coordinator.transaction.transaction_coordinator import TransactionCoordinator, TxnSettings
from rafka.coordinator.transaction.transaction_markers import remaining_after
from rafka.coordinator.transaction.transaction_metadata import TransactionState
from rafka.coordinator.transaction.transaction_requests import ExpectedProducer

PARTITIONS = 2
SETTINGS = TxnSettings(partitions=PARTITIONS, abort_interval_ms=3_600_000, remove_expired_interval_ms=3_600_000,
                       max_timeout_ms=60_000)
TXN = "txn-a"
T0, T1, T2 = (TopicPartition("t", p) for p in range(3))


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


class MemoryStorage:
    """The log as lists of batches, and a marker writer that records what it wrote.
    `marker_errors` answers each round's partitions in turn before NONE."""

    def __init__(self) -> None:
        self.batches: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        self.markers: list[tuple[int, int, int, bool, TopicPartition]] = []
        self.marker_errors: list[dict[TopicPartition, ErrorCode]] = []
        self.append_error: ErrorCode | None = None
        self.gate: asyncio.Event | None = None
        self.marker_gate: asyncio.Event | None = None

    async def append_txn_log(self, partition: int, batch: bytes) -> ErrorCode:
        if self.append_error is not None:
            return self.append_error
        self.batches[partition].append(batch)
        return ErrorCode.NONE

    async def read_txn_log(self, partition: int):
        if self.gate is not None:
            await self.gate.wait()
        for batch in list(self.batches[partition]):
            yield batch

    async def write_markers(self, producer_id, producer_epoch, coordinator_epoch, commit, partitions, timeout_ms):
        if self.marker_gate is not None:
            await self.marker_gate.wait()
        errors = self.marker_errors.pop(0) if self.marker_errors else {}
        results = {}
        for tp in partitions:
            results[tp] = errors.get(tp, ErrorCode.NONE)
            if results[tp] is ErrorCode.NONE:
                self.markers.append((producer_id, producer_epoch, coordinator_epoch, commit, tp))
        return results

    def states(self, txn_id: str = TXN) -> list[TransactionState]:
        """The states written for `txn_id`, in log order."""
        partition = transaction_log.partition_for(txn_id, PARTITIONS)
        out = []
        for batch in self.batches[partition]:
            loaded = transaction_log.load(batch)
            if txn_id in loaded:
                out.append(loaded[txn_id].state)
        return out


def new_coordinator(storage: MemoryStorage, clock: Clock, epoch: int = 0) -> TransactionCoordinator:
    ids = iter(range(1000, 2000))

    async def new_id() -> int:
        return next(ids)

    coordinator = TransactionCoordinator(1, SETTINGS, storage, new_id, clock_ms=clock)
    coordinator.set_led_partitions({p: epoch for p in range(PARTITIONS)})
    return coordinator


async def until(condition, what: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout_s} s")
        await asyncio.sleep(0.002)


def settled_in(coordinator: TransactionCoordinator, state: TransactionState) -> Callable[[], bool]:
    """Whether the coordinator holds TXN in `state` with nothing pending: its own view, which
    follows the write of that state to the log (a request in between gets CONCURRENT_TRANSACTIONS)."""
    def check() -> bool:
        meta = dict(coordinator.transactions()).get(TXN)
        return meta is not None and meta.state is state and meta.pending_state is None
    return check


async def loaded(storage: MemoryStorage, clock: Clock, epoch: int = 0) -> TransactionCoordinator:
    coordinator = new_coordinator(storage, clock, epoch)
    await until(lambda: coordinator.check(TXN) is ErrorCode.NONE, "the load")
    return coordinator


def test_ids_of_partitions_not_led_here_are_not_coordinator_and_loading_ones_load_in_progress():
    async def scenario():
        storage, clock = MemoryStorage(), Clock()
        storage.gate = asyncio.Event()
        coordinator = TransactionCoordinator(1, SETTINGS, storage, lambda: None, clock_ms=clock)
        assert coordinator.check(TXN) is ErrorCode.NOT_COORDINATOR
        coordinator.set_led_partitions({p: 0 for p in range(PARTITIONS)})
        code, _, _ = await coordinator.init_producer_id(TXN, 10_000, None)
        assert code is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        storage.gate.set()
        await until(lambda: coordinator.check(TXN) is ErrorCode.NONE, "the load")
        coordinator.set_led_partitions({})
        assert coordinator.check(TXN) is ErrorCode.NOT_COORDINATOR
    asyncio.run(scenario())


def test_init_producer_id_checks_the_request_then_gives_a_new_id_and_bumps_its_epoch():
    async def scenario():
        storage, clock = MemoryStorage(), Clock()
        coordinator = await loaded(storage, clock)
        assert (await coordinator.init_producer_id("", 10_000, None))[0] is ErrorCode.INVALID_REQUEST
        assert (await coordinator.init_producer_id(TXN, 60_001, None))[0] is ErrorCode.INVALID_TRANSACTION_TIMEOUT
        assert await coordinator.init_producer_id(TXN, 10_000, None) == (ErrorCode.NONE, 1000, 0)
        assert await coordinator.init_producer_id(TXN, 10_000, None) == (ErrorCode.NONE, 1000, 1)
        # KIP-360: the current epoch asks for a bump; a retry with the old one gets the same answer.
        assert await coordinator.init_producer_id(TXN, 10_000, ExpectedProducer(1000, 1)) == (ErrorCode.NONE, 1000, 2)
        assert await coordinator.init_producer_id(TXN, 10_000, ExpectedProducer(1000, 1)) == (ErrorCode.NONE, 1000, 2)
        assert (await coordinator.init_producer_id(TXN, 10_000, ExpectedProducer(1000, 0)))[0] \
            is ErrorCode.PRODUCER_FENCED
        assert storage.states() == [TransactionState.EMPTY] * 4
    asyncio.run(scenario())


def test_a_commit_is_answered_after_prepare_then_markers_go_to_every_partition_then_complete():
    async def scenario():
        storage, clock = MemoryStorage(), Clock()
        coordinator = await loaded(storage, clock, epoch=7)
        _, pid, epoch = await coordinator.init_producer_id(TXN, 10_000, None)
        assert await coordinator.add_partitions(TXN, pid, epoch, [T0, T1]) is ErrorCode.NONE
        assert await coordinator.add_partitions(TXN, pid, epoch, [T2]) is ErrorCode.NONE
        assert coordinator.verify_partitions(TXN, pid, epoch, [T0, TopicPartition("t", 9)]) == {
            T0: ErrorCode.NONE, TopicPartition("t", 9): ErrorCode.TRANSACTION_ABORTABLE}
        assert await coordinator.add_partitions(TXN, pid, epoch + 1, [T0]) is ErrorCode.PRODUCER_FENCED
        assert await coordinator.add_partitions(TXN, pid + 1, epoch, [T0]) is ErrorCode.INVALID_PRODUCER_ID_MAPPING
        storage.marker_gate = asyncio.Event()
        assert await coordinator.end_transaction(TXN, pid, epoch, True) is ErrorCode.NONE
        assert storage.states()[-1] is TransactionState.PREPARE_COMMIT
        # Until the markers are written, the transaction is being completed.
        assert await coordinator.add_partitions(TXN, pid, epoch, [T0]) is ErrorCode.CONCURRENT_TRANSACTIONS
        assert await coordinator.end_transaction(TXN, pid, epoch, True) is ErrorCode.CONCURRENT_TRANSACTIONS
        storage.marker_gate.set()
        await until(settled_in(coordinator, TransactionState.COMPLETE_COMMIT), "the completion")
        assert sorted(m[4] for m in storage.markers) == [T0, T1, T2]
        assert {m[:4] for m in storage.markers} == {(pid, epoch, 7, True)}
        assert await coordinator.end_transaction(TXN, pid, epoch, True) is ErrorCode.NONE   # a retry
        assert await coordinator.end_transaction(TXN, pid, epoch, False) is ErrorCode.INVALID_TXN_STATE
    asyncio.run(scenario())


def test_markers_are_retried_until_written_and_stop_at_a_newer_epoch():
    async def scenario():
        storage, clock = MemoryStorage(), Clock()
        coordinator = await loaded(storage, clock)
        _, pid, epoch = await coordinator.init_producer_id(TXN, 10_000, None)
        await coordinator.add_partitions(TXN, pid, epoch, [T0, T1])
        storage.marker_errors = [{T0: ErrorCode.NOT_LEADER_OR_FOLLOWER}, {T0: ErrorCode.REQUEST_TIMED_OUT}]
        assert await coordinator.end_transaction(TXN, pid, epoch, False) is ErrorCode.NONE
        await until(settled_in(coordinator, TransactionState.COMPLETE_ABORT), "the completion")
        assert sorted(m[4] for m in storage.markers) == [T0, T1]
    asyncio.run(scenario())
    assert remaining_after(frozenset({T0, T1, T2}), {T0: ErrorCode.NONE, T1: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}) \
        == (frozenset({T2}), None)
    assert remaining_after(frozenset({T0}), {T0: ErrorCode.TRANSACTION_COORDINATOR_FENCED}) \
        == (frozenset({T0}), ErrorCode.TRANSACTION_COORDINATOR_FENCED)


def test_a_new_producer_instance_fences_the_old_one_and_its_open_transaction_is_aborted():
    async def scenario():
        storage, clock = MemoryStorage(), Clock()
        coordinator = await loaded(storage, clock)
        _, pid, epoch = await coordinator.init_producer_id(TXN, 10_000, None)
        await coordinator.add_partitions(TXN, pid, epoch, [T0])
        code, _, _ = await coordinator.init_producer_id(TXN, 10_000, None)
        assert code is ErrorCode.CONCURRENT_TRANSACTIONS   # the old transaction is being aborted
        await until(settled_in(coordinator, TransactionState.COMPLETE_ABORT), "the abort")
        assert storage.states()[-1] is TransactionState.COMPLETE_ABORT
        assert storage.markers == [(pid, epoch + 1, 0, False, T0)]   # written with the fencing epoch
        assert await coordinator.init_producer_id(TXN, 10_000, None) == (ErrorCode.NONE, pid, epoch + 2)
        assert await coordinator.add_partitions(TXN, pid, epoch, [T0]) is ErrorCode.PRODUCER_FENCED
        assert await coordinator.end_transaction(TXN, pid, epoch, True) is ErrorCode.PRODUCER_FENCED
    asyncio.run(scenario())


def test_a_coordinator_taking_over_between_prepare_and_complete_sends_the_markers_again():
    async def scenario():
        storage, clock = MemoryStorage(), Clock()
        first = await loaded(storage, clock, epoch=1)
        _, pid, epoch = await first.init_producer_id(TXN, 10_000, None)
        await first.add_partitions(TXN, pid, epoch, [T0, T1])
        storage.marker_gate = asyncio.Event()                  # the markers never get out
        assert await first.end_transaction(TXN, pid, epoch, True) is ErrorCode.NONE
        first.set_led_partitions({})                            # the partition moves away
        await first.stop()
        assert storage.states()[-1] is TransactionState.PREPARE_COMMIT
        storage.marker_gate = None
        second = await loaded(storage, clock, epoch=2)
        await until(settled_in(second, TransactionState.COMPLETE_COMMIT), "the resumed completion")
        assert storage.states()[-1] is TransactionState.COMPLETE_COMMIT
        assert sorted(m[4] for m in storage.markers) == [T0, T1]
        assert {m[2] for m in storage.markers} == {2}           # under the new coordinator epoch
        assert await second.init_producer_id(TXN, 10_000, None) == (ErrorCode.NONE, pid, epoch + 1)
    asyncio.run(scenario())


def test_a_transaction_open_past_its_timeout_is_aborted_and_its_producer_fenced():
    async def scenario():
        storage, clock = MemoryStorage(), Clock()
        coordinator = await loaded(storage, clock)
        _, pid, epoch = await coordinator.init_producer_id(TXN, 10_000, None)
        await coordinator.add_partitions(TXN, pid, epoch, [T0])
        assert await coordinator.abort_timed_out() == 0
        clock.now += 10_001
        assert await coordinator.abort_timed_out() == 1
        await until(settled_in(coordinator, TransactionState.COMPLETE_ABORT), "the abort")
        assert storage.markers == [(pid, epoch + 1, 0, False, T0)]
        assert await coordinator.end_transaction(TXN, pid, epoch, True) is ErrorCode.PRODUCER_FENCED
    asyncio.run(scenario())


def test_a_failed_write_is_answered_as_kafka_maps_it_and_changes_nothing():
    async def scenario():
        storage, clock = MemoryStorage(), Clock()
        coordinator = await loaded(storage, clock)
        _, pid, epoch = await coordinator.init_producer_id(TXN, 10_000, None)
        storage.append_error = ErrorCode.NOT_ENOUGH_REPLICAS
        assert await coordinator.add_partitions(TXN, pid, epoch, [T0]) is ErrorCode.COORDINATOR_NOT_AVAILABLE
        storage.append_error = ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert await coordinator.add_partitions(TXN, pid, epoch, [T0]) is ErrorCode.NOT_COORDINATOR
        storage.append_error = None
        assert coordinator.verify_partitions(TXN, pid, epoch, [T0]) == {T0: ErrorCode.TRANSACTION_ABORTABLE}
        assert await coordinator.add_partitions(TXN, pid, epoch, [T0]) is ErrorCode.NONE
    asyncio.run(scenario())


def test_an_expired_transactional_id_is_removed_with_a_tombstone():
    async def scenario():
        storage, clock = MemoryStorage(), Clock()
        coordinator = await loaded(storage, clock)
        await coordinator.init_producer_id(TXN, 10_000, None)
        assert await coordinator.remove_expired() == 0
        clock.now += SETTINGS.id_expiration_ms
        assert await coordinator.remove_expired() == 1
        partition = transaction_log.partition_for(TXN, PARTITIONS)
        assert transaction_log.load(b"".join(storage.batches[partition])) == {}
        assert coordinator.transactions() == []
    asyncio.run(scenario())


def test_settings_give_transaction_state_kafkas_topic_configs():
    configs = TxnSettings().topic_configs()
    assert configs["cleanup.policy"] == "compact" and configs["min.insync.replicas"] == "2"
    assert TxnSettings().partitions == 50 and TxnSettings().max_timeout_ms == 900_000


def test_a_load_that_cannot_read_the_log_is_retried_meanwhile_load_in_progress():
    async def scenario():
        storage, clock = MemoryStorage(), Clock()
        failures = [RuntimeError("not the leader yet")]
        read = storage.read_txn_log

        def flaky(partition):
            if failures:
                raise failures.pop()
            return read(partition)
        storage.read_txn_log = flaky
        coordinator = TransactionCoordinator(1, SETTINGS, storage, lambda: None, clock_ms=clock)
        coordinator.set_led_partitions({p: 0 for p in range(PARTITIONS)})
        assert coordinator.check(TXN) is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        await until(lambda: coordinator.check(TXN) is ErrorCode.NONE, "the retried load")
        coordinator.set_led_partitions({p: 1 for p in range(PARTITIONS)})   # a new leader epoch: loaded again
        assert coordinator.check(TXN) is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        await until(lambda: coordinator.check(TXN) is ErrorCode.NONE, "the load at the new epoch")
        await coordinator.stop()
    asyncio.run(scenario())
