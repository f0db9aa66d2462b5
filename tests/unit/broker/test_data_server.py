"""The replica's end of the data socket: it answers every op of the protocol, a bad frame
closes its own connection only, and a partition that closed answers no frame of its openings."""
import asyncio

import pytest

from rafka.common.config import LogConfig
from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.partition_worker import data_channel as dc
from rafka.partition_worker import data_server
from rafka.partition_worker.messages import LATEST_TIMESTAMP
from rafka.partition_worker.replica_actor import PartitionReplica
from rafka.partition_worker.replica_state import LeaderAndIsr
from tests.unit.broker.test_held_writes import RecordingTransport, feed


def test_the_replica_handles_every_op_of_the_protocol():
    assert sorted(data_server._HANDLERS) == sorted(dc.EXCHANGES)


def connect(replica: PartitionReplica) -> tuple[RecordingTransport, object]:
    """A front end's connection to the partition `replica` serves now."""
    protocol = replica.serving.data_server.new_connection()
    transport = RecordingTransport()
    protocol.connection_made(transport)
    return transport, protocol


def list_latest(protocol, transport: RecordingTransport, request_id: int):
    feed(protocol, dc.frame(request_id, dc.encode_list_offset(LATEST_TIMESTAMP)))
    body = memoryview(b"".join(transport.writes.pop()))[dc.FRAME_HEAD.size:]
    return dc.decode_offset_lookup(body)


def with_leader(tmp_path, scenario) -> None:
    async def main() -> None:
        replica = PartitionReplica(1, TopicPartition("t", 0), str(tmp_path / "logs"), LogConfig(), None)
        assert replica.become(LeaderAndIsr(1, 3, (1,), (1,), 1)) is ErrorCode.NONE
        try:
            scenario(replica)
        finally:
            replica.close()
    asyncio.run(main())


@pytest.mark.parametrize("frame", [dc.frame(5, bytes([99, 0, 0])), dc.frame(5, b""),
                                   dc.frame(5, bytes([dc.Op.LIST_OFFSET, 1]))],
                         ids=["unknown op", "empty body", "truncated body"])
def test_a_bad_frame_closes_its_connection_and_no_other(tmp_path, frame):
    def scenario(replica):
        bad, bad_protocol = connect(replica)
        good, good_protocol = connect(replica)
        feed(bad_protocol, frame)
        assert bad.closed and bad.writes == []
        lookup = list_latest(good_protocol, good, 6)
        assert not good.closed and (lookup.error, lookup.offset, lookup.leader_epoch) == (ErrorCode.NONE, 0, 3)
    with_leader(tmp_path, scenario)


def test_a_frame_after_its_partition_closed_closes_the_connection_unanswered(tmp_path):
    async def main() -> None:
        replica = PartitionReplica(1, TopicPartition("t", 0), str(tmp_path / "logs"), LogConfig(), None)
        replica.become(LeaderAndIsr(1, 3, (1,), (1,), 1))
        transport, protocol = connect(replica)
        replica.close()
        await replica.open(TopicPartition("u", 0), str(tmp_path / "logs"), LogConfig(), None)   # served next
        replica.become(LeaderAndIsr(1, 3, (1,), (1,), 1))
        feed(protocol, dc.frame(6, dc.encode_list_offset(LATEST_TIMESTAMP)))
        assert transport.closed and transport.writes == []
        replica.close()
    asyncio.run(main())
