"""FramedProtocol: frames arrive whole and in order however the bytes are split."""
from __future__ import annotations

import asyncio
import random
import struct

import pytest

from rafka.common.frames import FrameError, FramedProtocol


def body_length(head: bytes) -> int:
    (size,) = struct.unpack(">i", head)
    if not 0 <= size <= 1 << 20:
        raise FrameError(f"bad size {size}")
    return size


async def feed(chunks: list[bytes], reuse: bool) -> tuple[list[bytes], bool]:
    loop = asyncio.get_running_loop()
    got: list[bytes] = []
    server_side, client_side = __import__("socket").socketpair()
    transport, protocol = await loop.connect_accepted_socket(
        lambda: FramedProtocol(4, body_length, lambda head, body: got.append(bytes(body)), reuse_buffer=reuse),
        server_side)
    client_side.setblocking(False)
    for chunk in chunks:
        await loop.sock_sendall(client_side, chunk)
        await asyncio.sleep(0)
    client_side.close()
    await asyncio.wait_for(protocol.closed, 5)
    return got, transport.is_closing()


@pytest.mark.parametrize("reuse", [False, True], ids=["own-buffer", "shared-buffer"])
def test_frames_split_anywhere_arrive_whole_and_in_order(reuse):
    rng = random.Random(3)
    bodies = [rng.randbytes(rng.choice([0, 1, 7, 300, 70_000])) for _ in range(40)]
    stream = b"".join(struct.pack(">i", len(b)) + b for b in bodies)
    chunks, pos = [], 0
    while pos < len(stream):
        step = rng.choice([1, 3, 4, 5, 1000, 65536])
        chunks.append(stream[pos:pos + step])
        pos += step
    got, _ = asyncio.run(feed(chunks, reuse))
    assert got == bodies


def test_an_impossible_length_closes_the_connection():
    got, closing = asyncio.run(feed([struct.pack(">i", 1) + b"a", struct.pack(">i", -7) + b"zzzz"], False))
    assert got == [b"a"] and closing
