"""The end-to-end latency floor: a stand-in broker that keeps produced records in memory, in
one Python process, and answers a waiting Fetch as soon as a Produce brings it data.

`_instant_broker.py` gives the consumer's throughput ceiling; this is its counterpart for
latency. A record's path here is the shortest a broker written in Python can offer: one
process, one event loop, no log, no index, no hop to a partition's process. The end-to-end
latency probe run against it (`bench/_kafka.end_to_end_latency`) shows what the client and
one Python process on this machine cost at a given rate, so the benchmark prints it beside
rafka and Tansu: what is left above it is the broker's own path.

It serves what that probe and its admin calls ask for (ApiVersions, Metadata,
FindCoordinator, CreateTopics, DeleteTopics, Produce, Fetch) and is not a broker: no
storage, no acks beyond answering at once, no idempotence, no offsets but the ones it
assigns. Any other request closes the connection.
"""
from __future__ import annotations

import asyncio
import bisect
import contextlib
import signal
import struct
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from _instant_broker import stand_in_process
from rafka.net.protocol import codec
from rafka.net.protocol.apis import APIS

PRODUCE, FETCH, METADATA, API_VERSIONS, FIND_COORDINATOR, CREATE_TOPICS, DELETE_TOPICS = 0, 1, 3, 18, 10, 19, 20
NODE_ID = 0
DEFAULT_PARTITIONS = 6
UNKNOWN_TOPIC_OR_PARTITION = 3
UNSUPPORTED_VERSION = 35
_SERVED = {key: APIS[key].versions
           for key in (PRODUCE, FETCH, METADATA, API_VERSIONS, FIND_COORDINATOR, CREATE_TOPICS, DELETE_TOPICS)}
_SIZE = struct.Struct(">i")
_BASE_OFFSET = struct.Struct(">q")
_LAST_OFFSET_DELTA = struct.Struct(">i")   # at byte 23 of a record batch
_BATCH_LENGTH = struct.Struct(">i")        # at byte 8: the bytes after the first 12
UNLIMITED_WAIT_MS = 500                    # a Fetch waits at most this long for data


@dataclass
class MemoryPartition:
    """A partition's record batches in memory, with the offsets assigned to them."""

    batches: list[bytes] = field(default_factory=list)
    base_offsets: list[int] = field(default_factory=list)
    end_offset: int = 0

    def append(self, records: bytes | memoryview) -> int:
        """Append the batches in `records`, numbering their records on from the end; return the
        first offset given."""
        first = self.end_offset
        data, at = bytearray(records), 0
        while at + 27 <= len(data):
            length = 12 + _BATCH_LENGTH.unpack_from(data, at + 8)[0]
            _BASE_OFFSET.pack_into(data, at, self.end_offset)
            self.base_offsets.append(self.end_offset)
            self.batches.append(bytes(data[at:at + length]))
            self.end_offset += _LAST_OFFSET_DELTA.unpack_from(data, at + 23)[0] + 1
            at += length
        return first

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding `offset`, up to `max_bytes` (at least one)."""
        if offset >= self.end_offset:
            return b""
        batches = self.batches
        first = max(0, bisect.bisect_right(self.base_offsets, offset) - 1)
        last, size = first + 1, len(batches[first])
        while last < len(batches) and size + len(batches[last]) <= max_bytes:
            size += len(batches[last])
            last += 1
        return b"".join(batches[first:last])


@dataclass(eq=False)
class WaitingFetch:
    """A Fetch with no data yet: answered when a Produce brings some, or when its wait ends."""

    connection: "_Connection"
    correlation_id: int
    version: int
    body: dict
    timer: asyncio.TimerHandle | None = None


class InstantLog:
    """Topics of in-memory partitions, and the Fetches waiting on them."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.topics: dict[str, list[MemoryPartition]] = {}
        self.topic_ids: dict[str, uuid.UUID] = {}
        self.waiting: dict[WaitingFetch, None] = {}

    # -- requests -------------------------------------------------------------------------
    def answer(self, connection: "_Connection", frame: bytes) -> bool:
        """Answer one request on `connection` (now, or once a waiting Fetch has data); False
        to close the connection (a request it does not serve)."""
        header, pos = codec.decode_request_header(frame)
        key, version, correlation_id = header.api_key, header.api_version, header.correlation_id
        if key == API_VERSIONS and not _SERVED[key][0] <= version <= _SERVED[key][1]:
            connection.send(codec.encode_response(key, 0, correlation_id,
                                                  {"error_code": UNSUPPORTED_VERSION, "api_keys": _api_keys()}))
            return True
        if key not in _SERVED or not _SERVED[key][0] <= version <= _SERVED[key][1]:
            return False
        body = codec.decode_request_body(memoryview(frame), header, pos)
        if key == FETCH:
            self._fetch(WaitingFetch(connection, correlation_id, version, body))
            return True
        if key == PRODUCE:
            response = self._produce(body)
            self._wake()
            if body["acks"] == 0:
                return True
        elif key == API_VERSIONS:
            response = {"error_code": 0, "api_keys": _api_keys(), "throttle_time_ms": 0}
        elif key == METADATA:
            response = self._metadata(body)
        elif key == FIND_COORDINATOR:
            me = {"node_id": NODE_ID, "host": "127.0.0.1", "port": self.port, "error_code": 0, "error_message": None}
            response = {"throttle_time_ms": 0, **me,
                        "coordinators": [{"key": k, **me} for k in body.get("coordinator_keys") or []]}
        elif key == CREATE_TOPICS:
            response = self._create_topics(body)
        else:
            response = self._delete_topics(body)
        connection.send(codec.encode_response(key, version, correlation_id, response))
        return True

    def _produce(self, body: dict) -> dict:
        responses = []
        for topic in body["topic_data"]:
            partitions = self.topics.get(topic["name"])
            answers = []
            for data in topic["partition_data"]:
                index = data["index"]
                if partitions is None or not 0 <= index < len(partitions) or data["records"] is None:
                    answers.append({"index": index, "error_code": UNKNOWN_TOPIC_OR_PARTITION, "base_offset": -1})
                    continue
                base = partitions[index].append(data["records"])
                answers.append({"index": index, "error_code": 0, "base_offset": base, "log_append_time_ms": -1,
                                "log_start_offset": 0})
            responses.append({"name": topic["name"], "partition_responses": answers})
        return {"responses": responses, "throttle_time_ms": 0}

    def _fetch(self, fetch: WaitingFetch) -> None:
        response, has_data = self._read(fetch.body)
        wait_ms = min(fetch.body.get("max_wait_ms", 0), UNLIMITED_WAIT_MS)
        if has_data or wait_ms <= 0:
            fetch.connection.send(codec.encode_response(FETCH, fetch.version, fetch.correlation_id, response))
            return
        fetch.timer = asyncio.get_running_loop().call_later(wait_ms / 1000, self._finish, fetch)
        self.waiting[fetch] = None

    def _wake(self) -> None:
        """A Produce came: every waiting Fetch that now has data is answered."""
        for fetch in list(self.waiting):
            response, has_data = self._read(fetch.body)
            if has_data:
                self._finish(fetch, response)

    def _finish(self, fetch: WaitingFetch, response: dict | None = None) -> None:
        if self.waiting.pop(fetch, False) is False:
            return
        if fetch.timer is not None:
            fetch.timer.cancel()
        if response is None:
            response, _ = self._read(fetch.body)
        fetch.connection.send(codec.encode_response(FETCH, fetch.version, fetch.correlation_id, response))

    def _read(self, body: dict) -> tuple[dict, bool]:
        budget = body.get("max_bytes", 0x7FFFFFFF)
        responses, has_data = [], False
        for topic in body["topics"]:
            name = topic.get("topic")
            partitions = self.topics.get(name) if name is not None else None
            answers = []
            for p in topic["partitions"]:
                index = p["partition"]
                if partitions is None or not 0 <= index < len(partitions):
                    answers.append({"partition_index": index, "error_code": UNKNOWN_TOPIC_OR_PARTITION,
                                    "high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
                                    "aborted_transactions": [], "preferred_read_replica": -1, "records": b""})
                    continue
                partition = partitions[index]
                records = partition.read(p["fetch_offset"], min(p["partition_max_bytes"], max(budget, 0)))
                budget -= len(records)
                has_data = has_data or bool(records)
                answers.append({"partition_index": index, "error_code": 0, "high_watermark": partition.end_offset,
                                "last_stable_offset": partition.end_offset, "log_start_offset": 0,
                                "aborted_transactions": [], "preferred_read_replica": -1, "records": records})
            responses.append({"topic": name, "topic_id": topic.get("topic_id"), "partitions": answers})
        return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}, has_data

    def _metadata(self, body: dict) -> dict:
        requested = body.get("topics")
        names = list(self.topics) if requested is None else [t["name"] for t in requested]
        topics = []
        for name in names:
            partitions = self.topics.get(name)
            topics.append({
                "error_code": 0 if partitions is not None else UNKNOWN_TOPIC_OR_PARTITION, "name": name,
                "topic_id": self.topic_ids.get(name, uuid.UUID(int=0)), "is_internal": False,
                "partitions": [{"error_code": 0, "partition_index": p, "leader_id": NODE_ID, "leader_epoch": 0,
                                "replica_nodes": [NODE_ID], "isr_nodes": [NODE_ID], "offline_replicas": []}
                               for p in range(len(partitions or ()))],
                "topic_authorized_operations": -2147483648})
        return {"throttle_time_ms": 0, "cluster_id": "instant-log", "controller_id": NODE_ID,
                "brokers": [{"node_id": NODE_ID, "host": "127.0.0.1", "port": self.port, "rack": None}],
                "topics": topics, "cluster_authorized_operations": -2147483648}

    def _create_topics(self, body: dict) -> dict:
        answers = []
        for topic in body["topics"]:
            name, count = topic["name"], topic["num_partitions"]
            count = DEFAULT_PARTITIONS if count == -1 else count
            if name not in self.topics:
                self.topics[name] = [MemoryPartition() for _ in range(count)]
                self.topic_ids[name] = uuid.uuid4()
            answers.append({"name": name, "topic_id": self.topic_ids[name], "error_code": 0, "error_message": None,
                            "num_partitions": count, "replication_factor": 1, "configs": []})
        return {"throttle_time_ms": 0, "topics": answers}

    def _delete_topics(self, body: dict) -> dict:
        names = body.get("topic_names") or [t["name"] for t in body.get("topics") or []]
        answers = []
        for name in names:
            gone = self.topics.pop(name, None) is not None
            answers.append({"name": name, "topic_id": self.topic_ids.pop(name, uuid.UUID(int=0)),
                            "error_code": 0 if gone else UNKNOWN_TOPIC_OR_PARTITION, "error_message": None})
        return {"throttle_time_ms": 0, "responses": answers}


def _api_keys() -> list[dict]:
    return [{"api_key": k, "min_version": lo, "max_version": hi} for k, (lo, hi) in sorted(_SERVED.items())]


class _Connection(asyncio.Protocol):
    """One client connection: size-prefixed requests in, responses out in one write each."""

    def __init__(self, log: InstantLog) -> None:
        self._log = log
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while len(self._buffer) >= 4:
            (size,) = _SIZE.unpack_from(self._buffer)
            if len(self._buffer) < 4 + size:
                return
            frame = bytes(self._buffer[4:4 + size])
            del self._buffer[:4 + size]
            if not self._log.answer(self, frame):
                self._transport.close()
                return

    def send(self, parts: list) -> None:
        if self._transport is not None and not self._transport.is_closing():
            payload = b"".join(parts)
            self._transport.write(_SIZE.pack(len(payload)) + payload)

    def connection_lost(self, exc: Exception | None) -> None:
        for fetch in [f for f in self._log.waiting if f.connection is self]:
            self._log.waiting.pop(fetch, None)
            if fetch.timer is not None:
                fetch.timer.cancel()


async def serve() -> None:
    """Serve on a free port of 127.0.0.1 until SIGTERM; print the address once listening."""
    loop = asyncio.get_running_loop()
    holder: list[InstantLog] = []
    server = await loop.create_server(lambda: _Connection(holder[0]), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    holder.append(InstantLog(port))
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    print(f"127.0.0.1:{port}", flush=True)
    async with server:
        await stop.wait()


@contextlib.contextmanager
def instant_log(timeout_s: float = 60.0) -> Iterator[str]:
    """Run an InstantLog in a process of its own (as a broker would be); yield its address."""
    with stand_in_process([__file__], "the instant log", timeout_s) as address:
        yield address


if __name__ == "__main__":
    asyncio.run(serve())
