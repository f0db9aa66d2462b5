"""The transaction APIs' handlers over a transaction coordinator with an in-memory log: the
shapes of AddPartitionsToTxn v0-3 (one transaction) and v4 (batched, verify-only), Kafka's
order of refusals (unknown topics first, the others OPERATION_NOT_ATTEMPTED), PRODUCER_FENCED
answered INVALID_PRODUCER_EPOCH to versions that predate it, and FindCoordinator key types."""
from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field

from rafka.common.errors import ErrorCode
from rafka.common.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
from rafka.coordinator.transaction.transaction_coordinator import TransactionCoordinator
from rafka.net.group_handlers import GroupApis, RequestContext
from rafka.net.txn_handlers import TxnApis
from tests.unit.coordinator.test_transaction_coordinator import SETTINGS, MemoryStorage

CONTEXT = RequestContext("test", "/127.0.0.1")
TXN = "txn-h"


@dataclass
class Services:
    txns: TransactionCoordinator
    broker_id: int = 0
    metadata: ClusterMetadata = field(default_factory=lambda: ClusterMetadata(
        "c", 0, 1, {0: BrokerInfo(0, "127.0.0.1", 9092)},
        {"t": TopicInfo("t", uuid.uuid4(), {p: PartitionInfo(p, 0, 0, (0,), (0,)) for p in range(2)})}))
    groups: object = None

    async def init_producer_id(self, producer_id: int, producer_epoch: int) -> tuple[ErrorCode, int, int]:
        return ErrorCode.NONE, 77, 0


async def ready() -> tuple[Services, TxnApis]:
    ids = iter(range(500, 600))

    async def new_id() -> int:
        return next(ids)

    coordinator = TransactionCoordinator(0, SETTINGS, MemoryStorage(), new_id)
    coordinator.set_led_partitions({p: 0 for p in range(SETTINGS.partitions)})
    for _ in range(200):
        if coordinator.check(TXN) is ErrorCode.NONE:
            break
        await asyncio.sleep(0.002)
    services = Services(coordinator)
    return services, TxnApis(services)


def test_add_partitions_v3_and_v4_shapes_and_kafkas_order_of_refusals():
    async def scenario():
        services, apis = await ready()
        answer = await apis.init_producer_id(4, {"transactional_id": TXN, "transaction_timeout_ms": 10_000,
                                                 "producer_id": -1, "producer_epoch": -1}, CONTEXT)
        assert (answer["error_code"], answer["producer_id"], answer["producer_epoch"]) == (ErrorCode.NONE, 500, 0)
        idempotent = await apis.init_producer_id(4, {"transactional_id": None, "transaction_timeout_ms": 0,
                                                     "producer_id": -1, "producer_epoch": -1}, CONTEXT)
        assert idempotent["producer_id"] == 77
        unknown = await apis.add_partitions_to_txn(3, {
            "v3_and_below_transactional_id": TXN, "v3_and_below_producer_id": 500, "v3_and_below_producer_epoch": 0,
            "v3_and_below_topics": [{"name": "t", "partitions": [0]}, {"name": "nope", "partitions": [0]}]}, CONTEXT)
        codes = {(t["name"], p["partition_index"]): p["partition_error_code"]
                 for t in unknown["results_by_topic_v3_and_below"] for p in t["results_by_partition"]}
        assert codes == {("t", 0): ErrorCode.OPERATION_NOT_ATTEMPTED, ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        added = await apis.add_partitions_to_txn(3, {
            "v3_and_below_transactional_id": TXN, "v3_and_below_producer_id": 500, "v3_and_below_producer_epoch": 0,
            "v3_and_below_topics": [{"name": "t", "partitions": [0]}]}, CONTEXT)
        assert added["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"] == 0
        verified = await apis.add_partitions_to_txn(4, {"transactions": [{
            "transactional_id": TXN, "producer_id": 500, "producer_epoch": 0, "verify_only": True,
            "topics": [{"name": "t", "partitions": [0, 1]}]}]}, CONTEXT)
        assert verified["error_code"] == 0
        result = verified["results_by_transaction"][0]
        assert result["transactional_id"] == TXN
        assert {p["partition_index"]: p["partition_error_code"] for p in result["topic_results"][0]["results_by_partition"]} \
            == {0: ErrorCode.NONE, 1: ErrorCode.TRANSACTION_ABORTABLE}
        # A stale epoch: PRODUCER_FENCED from v2 on, INVALID_PRODUCER_EPOCH before.
        for version, code in ((1, ErrorCode.INVALID_PRODUCER_EPOCH), (2, ErrorCode.PRODUCER_FENCED)):
            fenced = await apis.add_partitions_to_txn(version, {
                "v3_and_below_transactional_id": TXN, "v3_and_below_producer_id": 500,
                "v3_and_below_producer_epoch": 9, "v3_and_below_topics": [{"name": "t", "partitions": [1]}]}, CONTEXT)
            assert fenced["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"] == code
            ended = await apis.end_txn(version, {"transactional_id": TXN, "producer_id": 500, "producer_epoch": 9,
                                                 "committed": True}, CONTEXT)
            assert ended["error_code"] == code
        assert (await apis.end_txn(3, {"transactional_id": TXN, "producer_id": 500, "producer_epoch": 0,
                                       "committed": False}, CONTEXT))["error_code"] == ErrorCode.NONE
        await services.txns.stop()
    asyncio.run(scenario())


def test_find_coordinator_of_a_transactional_id_and_of_an_unknown_key_type():
    async def scenario():
        services, _ = await ready()
        from rafka.coordinator.transaction.transaction_log import TRANSACTION_STATE_TOPIC

        partitions = {p: PartitionInfo(p, 0, 3, (0,), (0,)) for p in range(SETTINGS.partitions)}
        services.metadata = ClusterMetadata("c", 0, 1, {0: BrokerInfo(0, "127.0.0.1", 9092)}, {
            TRANSACTION_STATE_TOPIC: TopicInfo(TRANSACTION_STATE_TOPIC, uuid.uuid4(), partitions, internal=True)})
        services.starting = frozenset()

        async def ensure() -> None:
            raise AssertionError("the topic exists")
        services.ensure_txn_topic = ensure
        groups = GroupApis(services)
        found = await groups.find_coordinator(3, {"key": TXN, "key_type": 1}, CONTEXT)
        assert (found["error_code"], found["node_id"], found["port"]) == (ErrorCode.NONE, 0, 9092)
        empty = await groups.find_coordinator(3, {"key": "", "key_type": 1}, CONTEXT)
        assert empty["error_code"] == ErrorCode.INVALID_REQUEST
        other = await groups.find_coordinator(4, {"coordinator_keys": ["x"], "key_type": 2}, CONTEXT)
        assert other["coordinators"][0]["error_code"] == ErrorCode.INVALID_REQUEST
        await services.txns.stop()
    asyncio.run(scenario())


def test_the_verifier_asks_once_per_transaction_at_a_partition_and_again_after_its_marker():
    from rafka.common.types import TopicPartition
    from rafka.coordinator.transaction.transaction_log import TRANSACTION_STATE_TOPIC
    from rafka.net.txn_produce import TransactionalWrite
    from rafka.net.txn_verifier import CoordinatorVerifier

    async def scenario():
        services, apis = await ready()
        partitions = {p: PartitionInfo(p, 0, 0, (0,), (0,)) for p in range(SETTINGS.partitions)}
        services.metadata = ClusterMetadata("c", 0, 1, {0: BrokerInfo(0, "127.0.0.1", 9092)}, {
            **services.metadata.topics,
            TRANSACTION_STATE_TOPIC: TopicInfo(TRANSACTION_STATE_TOPIC, uuid.uuid4(), partitions, internal=True)})
        asked: list[list[TopicPartition]] = []
        verify = services.txns.verify_partitions

        def counting(txn_id, pid, epoch, tps):
            asked.append(list(tps))
            return verify(txn_id, pid, epoch, tps)
        services.txns.verify_partitions = counting
        verifier = CoordinatorVerifier(services)
        init = await apis.init_producer_id(4, {"transactional_id": TXN, "transaction_timeout_ms": 10_000,
                                               "producer_id": -1, "producer_epoch": -1}, CONTEXT)
        pid = init["producer_id"]
        t0, t1 = TopicPartition("t", 0), TopicPartition("t", 1)
        writes = [TransactionalWrite(t0, pid, 0), TransactionalWrite(t1, pid, 0)]
        assert await verifier.verify(TXN, writes) == {t0: ErrorCode.INVALID_TXN_STATE, t1: ErrorCode.INVALID_TXN_STATE}
        await services.txns.add_partitions(TXN, pid, 0, [t0])
        assert await verifier.verify(TXN, writes) == {t0: ErrorCode.NONE, t1: ErrorCode.INVALID_TXN_STATE}
        assert await verifier.verify(TXN, writes[:1]) == {t0: ErrorCode.NONE}
        assert asked == [[t0, t1], [t0, t1]]          # the confirmed partition is not asked again
        verifier.forget(t0, pid)                      # its marker is written here
        assert await verifier.verify(TXN, writes[:1]) == {t0: ErrorCode.NONE}
        verifier.keep_only({t1})                      # its leadership left this broker
        assert await verifier.verify(TXN, writes[:1]) == {t0: ErrorCode.NONE}
        assert asked[2:] == [[t0], [t0]]
        assert await verifier.verify(TXN, [TransactionalWrite(t1, pid, 3)]) == {t1: ErrorCode.INVALID_PRODUCER_EPOCH}
        await services.txns.stop()
    asyncio.run(scenario())


def test_txn_offset_commit_checks_the_group_then_the_transaction_then_writes():
    from rafka.coordinator.group.group_coordinator import GroupCoordinator
    from tests.unit.coordinator.test_group_coordinator import SETTINGS as GROUP_SETTINGS, MemoryOffsets

    async def scenario():
        services, _ = await ready()
        groups = GroupCoordinator(0, GROUP_SETTINGS, MemoryOffsets())
        services.groups = groups
        verdicts = {"answer": ErrorCode.INVALID_TXN_STATE}
        asked = []

        async def verify(txn_id, pid, epoch, tp):
            asked.append(tp)
            return verdicts["answer"]
        apis = TxnApis(services, verify)
        body = {"transactional_id": TXN, "group_id": "g", "producer_id": 500, "producer_epoch": 0,
                "generation_id": -1, "member_id": "", "group_instance_id": None,
                "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 5,
                                                         "committed_leader_epoch": -1, "committed_metadata": ""}]},
                           {"name": "nope", "partitions": [{"partition_index": 0, "committed_offset": 5,
                                                            "committed_leader_epoch": -1, "committed_metadata": ""}]}]}

        def codes(answer: dict) -> dict:
            return {(t["name"], p["partition_index"]): p["error_code"] for t in answer["topics"] for p in t["partitions"]}
        assert codes(await apis.txn_offset_commit(3, body, CONTEXT)) == {
            ("t", 0): ErrorCode.NOT_COORDINATOR, ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert asked == []                                  # not this group's coordinator: not verified
        groups.set_led_partitions(set(range(GROUP_SETTINGS.partitions)))
        for _ in range(200):
            if groups.check("g") is ErrorCode.NONE:
                break
            await asyncio.sleep(0.002)
        assert codes(await apis.txn_offset_commit(3, body, CONTEXT))[("t", 0)] == ErrorCode.INVALID_TXN_STATE
        verdicts["answer"] = ErrorCode.NONE
        assert codes(await apis.txn_offset_commit(3, body, CONTEXT))[("t", 0)] == ErrorCode.NONE
        assert groups.txn_offsets.has_pending("g", "t", 0)
        await groups.stop()
        await services.txns.stop()
    asyncio.run(scenario())
