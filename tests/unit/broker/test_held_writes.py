"""A replica's answers on one data connection while it handles a frame go out in one write."""
import asyncio

from rafka.common.config import LogConfig
from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.partition_worker import data_channel as dc
from rafka.partition_worker.held_writes import HeldWrites
from rafka.partition_worker.record_batch import Record, encode_batch
from rafka.partition_worker.replica_actor import PartitionReplica
from rafka.partition_worker.replica_state import LeaderAndIsr


class RecordingTransport:
    """What a replica wrote, one entry per write call (its parts)."""

    def __init__(self) -> None:
        self.writes: list[list[bytes]] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append([bytes(data)])

    def writelines(self, parts) -> None:
        self.writes.append([bytes(p) for p in parts])

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str, default=None):
        return default


def feed(protocol, data: bytes) -> None:
    """Hand `data` to the protocol as the event loop would, in the pieces it asks for."""
    while data:
        buffer = protocol.get_buffer(len(data))
        n = min(len(buffer), len(data))
        buffer[:n] = data[:n]
        protocol.buffer_updated(n)
        data = data[n:]


def frames(writes: list[list[bytes]]) -> list[list[int]]:
    """The request ids of the frames in each write."""
    out = []
    for parts in writes:
        data, ids = b"".join(parts), []
        while data:
            length, request_id = dc.FRAME_HEAD.unpack_from(data)
            ids.append(request_id)
            data = data[4 + length:]
        out.append(ids)
    return out


def test_an_append_and_the_follow_read_it_answers_go_out_in_one_write(tmp_path):
    async def main() -> None:
        replica = PartitionReplica(1, TopicPartition("t", 0), str(tmp_path / "logs"), LogConfig(), None)
        assert replica.become(LeaderAndIsr(1, 3, (1,), (1,), 1)) is ErrorCode.NONE
        protocol = replica.serving.data_server.new_connection()
        transport = RecordingTransport()
        protocol.connection_made(transport)
        records = encode_batch([Record(0, 1_700_000_000_000, None, b"v" * 100)])
        try:
            feed(protocol, dc.frame(7, dc.encode_read(0, 1 << 20, 500, follow_id=7)))
            assert transport.writes == []                        # nothing to read yet: parked
            feed(protocol, dc.frame(8, b"".join(dc.encode_append([records], 1))))
            assert frames(transport.writes) == [[7, 8]]          # its answer, then the append's, at once
            answer = dc.decode_fetch_result(memoryview(b"".join(transport.writes[0]))[dc.FRAME_HEAD.size:])
            assert (answer.next_offset, answer.high_watermark, answer.size) == (1, 1, len(records))
        finally:
            replica.close()
    asyncio.run(main())


def test_writes_outside_a_held_frame_go_out_at_once_and_in_order():
    transport = RecordingTransport()
    out = HeldWrites(transport)
    out.write(b"a")
    assert transport.writes == [[b"a"]]
    out.hold()
    out.write(b"b")
    out.write(b"c")
    assert transport.writes == [[b"a"]]
    out.release()
    assert transport.writes == [[b"a"], [b"b", b"c"]]
    out.release()                                                 # nothing held: nothing written
    out.hold()
    transport.closed = True
    out.write(b"d")
    out.release()                                                 # the connection closed meanwhile
    assert transport.writes == [[b"a"], [b"b", b"c"]]
