"""KafkaServer's bounds on real sockets (no Ray): connections per address and in all, idle
connections, and the memory of requests read but not answered. The handler is a stand-in that
answers each frame with its length and SHA-256, optionally holding answers back."""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import random
import struct
from typing import AsyncIterator

import pytest
import uvloop

from rafka.net.request_memory import OVERHEAD_BYTES, PIECE_BYTES, SMALL_BYTES
from rafka.net.server import KafkaServer
from rafka.net.socket_settings import SocketServerSettings

# The front end runs on uvloop in a Ray worker, on asyncio's loop elsewhere: reading paused and
# resumed by the memory gate is tried on both (uvloop crashed when it was paused in get_buffer).
EVENT_LOOPS = pytest.mark.parametrize("run", [asyncio.run, uvloop.run], ids=["asyncio", "uvloop"])

MIB = 1024 * 1024


class Digest:
    """Answers [length, sha256(frame)]; while `hold` is clear, answers wait."""

    def __init__(self) -> None:
        self.hold = asyncio.Event()
        self.hold.set()

    async def handle(self, frame: memoryview, peer: str) -> list:
        await self.hold.wait()
        return [struct.pack(">i", len(frame)), hashlib.sha256(frame).digest()]


@contextlib.asynccontextmanager
async def serving(settings: SocketServerSettings, handler: Digest | None = None) -> AsyncIterator[KafkaServer]:
    server = KafkaServer(handler or Digest(), host="127.0.0.1", port=0, broker_id=0, settings=settings)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def connect(server: KafkaServer, source: str = "127.0.0.1") -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", server.port, local_addr=(source, 0))


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


async def answer(reader: asyncio.StreamReader, timeout_s: float = 20) -> tuple[int, bytes]:
    head = await asyncio.wait_for(reader.readexactly(4), timeout_s)
    body = await asyncio.wait_for(reader.readexactly(struct.unpack(">i", head)[0]), timeout_s)
    return struct.unpack(">i", body[:4])[0], body[4:]


async def round_trip(server: KafkaServer, body: bytes = b"ping", source: str = "127.0.0.1") -> None:
    reader, writer = await connect(server, source)
    writer.write(frame(body))
    assert await answer(reader) == (len(body), hashlib.sha256(body).digest())
    writer.close()


async def wait_until(condition, timeout_s: float = 20.0) -> None:  # noqa: ANN001
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def closed_by_server(reader: asyncio.StreamReader, timeout_s: float = 20) -> bool:
    try:
        return await asyncio.wait_for(reader.read(1), timeout_s) == b""
    except ConnectionResetError:
        return True


def test_a_connection_over_its_address_limit_is_closed_at_once_and_others_are_served():
    async def scenario() -> None:
        async with serving(SocketServerSettings(max_connections_per_ip_overrides="127.0.0.2:2")) as server:
            held = [await connect(server, "127.0.0.2") for _ in range(2)]
            for reader, writer in held:
                writer.write(frame(b"hello"))
                assert (await answer(reader))[0] == 5
            reader, writer = await connect(server, "127.0.0.2")
            assert await closed_by_server(reader)
            await round_trip(server, source="127.0.0.1")    # the default limit is Int.MaxValue
            held[0][1].close()
            await wait_until(lambda: server.quotas.by_ip.get("127.0.0.2") == 1)
            await round_trip(server, source="127.0.0.2")
    asyncio.run(scenario())


def test_at_max_connections_a_new_connection_waits_until_one_closes():
    async def scenario() -> None:
        async with serving(SocketServerSettings(max_connections=2)) as server:
            first, second = await connect(server), await connect(server)
            await wait_until(lambda: server.connection_count == 2)
            reader, writer = await connect(server)           # the kernel's backlog takes it
            writer.write(frame(b"waiting"))
            with pytest.raises(asyncio.TimeoutError):
                await answer(reader, timeout_s=0.5)
            assert server.connection_count == 2
            first[1].close()
            assert (await answer(reader))[0] == 7             # accepted and served once a slot frees
    asyncio.run(scenario())


def test_a_connection_that_moves_no_byte_for_connections_max_idle_ms_is_closed():
    async def scenario() -> None:
        async with serving(SocketServerSettings(connections_max_idle_ms=300)) as server:
            idle_reader, _ = await connect(server)
            busy_reader, busy_writer = await connect(server)
            started = asyncio.get_running_loop().time()
            closed = asyncio.ensure_future(closed_by_server(idle_reader))
            while not closed.done():
                busy_writer.write(frame(b"x"))
                await answer(busy_reader)
                await asyncio.sleep(0.05)
            assert closed.result() and asyncio.get_running_loop().time() - started >= 0.3
            busy_writer.write(frame(b"still here"))
            assert (await answer(busy_reader))[0] == 10
    asyncio.run(scenario())


@EVENT_LOOPS
def test_length_prefixes_alone_cost_nothing_partial_bodies_stop_at_the_bound_and_others_are_served(run):
    """256 length prefixes of 100 MiB over 8 connections, then 4 of them send 40 MiB of body
    each: the server holds at most queued.max.request.bytes (plus a piece and the small
    allowance per connection), the senders are paused by TCP, and small requests of other
    clients are answered throughout. Closing the hostile connections frees everything."""
    async def scenario() -> None:
        settings = SocketServerSettings()
        async with serving(settings) as server:
            hostile = [await connect(server) for _ in range(8)]
            for _, writer in hostile:
                writer.write(struct.pack(">i", 100 * MIB) * 32)
                await writer.drain()
            await wait_until(lambda: server.connection_count == 8 and server.memory.total > 0)
            assert server.memory.total <= 8 * (PIECE_BYTES + OVERHEAD_BYTES)   # prefixes: next to nothing
            chunk = bytes(MIB)
            sent = [0, 0, 0, 0]

            async def push(index: int) -> None:
                writer = hostile[index][1]
                while sent[index] < 40 * MIB:
                    writer.write(chunk)
                    await writer.drain()
                    sent[index] += MIB

            pushers = [asyncio.ensure_future(push(i)) for i in range(4)]
            limit = settings.queued_max_request_bytes
            await wait_until(lambda: server.memory.total >= limit and server.memory.waiting >= 2, timeout_s=60)
            for _ in range(5):
                await round_trip(server, b"metadata please")   # each client's first small request gets in
            bound = limit + PIECE_BYTES + settings.max_request_bytes + 20 * (SMALL_BYTES + OVERHEAD_BYTES + 1)
            assert server.memory.peak <= bound
            assert not all(p.done() for p in pushers)     # the senders are held back, not served
            for task in pushers:
                task.cancel()
            for _, writer in hostile:
                writer.close()
            await wait_until(lambda: server.connection_count == 0 and server.memory.total == 0)
    run(scenario())


@EVENT_LOOPS
def test_pipelined_frames_of_every_size_arrive_intact_through_pieces_and_pauses(run):
    async def scenario() -> None:
        rng = random.Random(5)
        settings = SocketServerSettings(max_request_bytes=4 * MIB, queued_max_request_bytes=4 * MIB,
                                        queued_max_requests=4)
        handler = Digest()
        async with serving(settings, handler) as server:
            bodies = [rng.randbytes(rng.choice([1, 100, 70_000, 1_500_000, 4 * MIB])) for _ in range(24)]
            clients = [await connect(server) for _ in range(3)]
            handler.hold.clear()      # answers wait: reading must pause at the bounds, not fail

            async def send(writer: asyncio.StreamWriter) -> None:
                for body in bodies:
                    writer.write(frame(body))
                    await writer.drain()

            senders = [asyncio.ensure_future(send(w)) for _, w in clients]
            await wait_until(lambda: server.memory.waiting > 0 or all(
                c.share.waiting.name != "NONE" for c in server._connections))
            handler.hold.set()
            for reader, _ in clients:
                for body in bodies:
                    assert await answer(reader, 60) == (len(body), hashlib.sha256(body).digest())
            await asyncio.gather(*senders)
            assert server.memory.peak <= 4 * MIB + PIECE_BYTES + 4 * MIB + 3 * (SMALL_BYTES + OVERHEAD_BYTES + 1)
    run(scenario())
