"""The front end's sendfile of fetch regions: straight to the socket when it takes them, else
through the event loop, and always after the bytes the transport still holds."""
import asyncio
import os
import socket
import struct
import threading

import pytest
import uvloop

from rafka.common.frames import FramedProtocol
from rafka.net.handlers import FileRecords
from rafka.net.server import INLINE_REGION_BYTES, CloseConnection, _sendfile, response_writes
from rafka.partition_worker.messages import Region


@pytest.mark.parametrize("run", [asyncio.run, uvloop.run], ids=["asyncio", "uvloop"])
def test_regions_follow_buffered_bytes_in_order_through_a_slow_reader(tmp_path, run):
    """With asyncio's loop the rest goes by loop.sendfile; uvloop (which Ray installs in its
    workers) has none, and the rest is copied as the transport takes it."""
    data = os.urandom(2 << 20)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    head = os.urandom(512 << 10)
    regions = [(1000, 1 << 20), (3 << 19, 256 << 10), ((2 << 20) - 100, 100)]
    expected = head + b"".join(data[p:p + n] for p, n in regions)
    received = bytearray()

    def read_slowly(sock: socket.socket) -> None:
        while len(received) < len(expected):
            chunk = sock.recv(64 << 10)
            if not chunk:
                return
            received.extend(chunk)

    async def main() -> None:
        ours, theirs = socket.socketpair()
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 10)
        theirs.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 10)
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.create_unix_connection(
            lambda: FramedProtocol(4, lambda head: 0, lambda head, body: None), sock=ours)
        transport.write(head)
        assert transport.get_write_buffer_size() > 0  # the socket could not take it all
        reader = threading.Thread(target=read_slowly, args=(theirs,))
        reader.start()
        with open(path, "rb") as f:
            for position, length in regions:
                await _sendfile(loop, transport, f, position, length, drain=protocol.drain)
        await asyncio.to_thread(reader.join, 30)
        transport.close()
        theirs.close()

    run(main())
    assert len(received) == len(expected)
    assert received == expected


def test_a_response_goes_out_in_one_write_around_its_small_regions_and_sendfile_for_big_ones(tmp_path):
    """A consumer at the end of a log gets a record per response: its frame is one write (each
    write wakes the client); only a region over INLINE_REGION_BYTES goes by sendfile."""
    data = os.urandom(3 * INLINE_REGION_BYTES)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    small, big = Region(str(path), 10, 170), Region(str(path), 100, INLINE_REGION_BYTES + 1)
    with open(path, "rb") as f:
        (frame,) = response_writes([b"head", FileRecords((small,)), b"tail"], [f])
        assert frame == struct.pack(">i", 4 + 170 + 4) + b"head" + data[10:180] + b"tail"
        before, sent = response_writes([b"head", FileRecords((small, big))], [f, f])
    assert before == struct.pack(">i", 4 + 170 + INLINE_REGION_BYTES + 1) + b"head" + data[10:180]
    assert sent == (f, 100, INLINE_REGION_BYTES + 1)


def test_a_region_cut_short_closes_the_connection_rather_than_send_a_short_frame(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"x" * 100)
    with open(path, "rb") as f:
        with pytest.raises(CloseConnection):
            list(response_writes([FileRecords((Region(str(path), 50, 80),))], [f]))
