"""The consumer's own ceiling: a stand-in broker that answers every Fetch at once from memory.

The produce side has a client ceiling that needs no broker (confluent-kafka enqueueing to an
unreachable address). A consumer needs somebody to answer its fetches, so this is the
cheapest answerer we can write: one topic whose record batches are built once, in memory,
laid out to fill each partition's fetch window; a Fetch is answered with slices of them,
sent without copying. It serves only what a confluent-kafka consumer that `assign()`s
explicit offsets asks for (ApiVersions, Metadata, FindCoordinator, Fetch) and is not a
broker: no storage, no produce, one topic.

What a consumer reaches against it is what any broker could get out of that client on
this machine, so the benchmark prints it beside rafka, Tansu and the consume target.
"""
from __future__ import annotations

import bisect
import contextlib
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from rafka.net.protocol import codec
from rafka.net.protocol.apis import APIS
from _verify import HEAD, stamp
from rafka.partition_worker.record_batch import Record, encode_batch

API_VERSIONS, METADATA, FIND_COORDINATOR, FETCH, PRODUCE = 18, 3, 10, 1, 0
NODE_ID = 0
# Whole batches of about a quarter of the consumer's default max.partition.fetch.bytes (1 MiB),
# so each partition's answer fills nearly all of its window (the layout best for the client).
BATCH_BYTES = 256 * 1024
_SIZE = struct.Struct(">i")
_SERVED = {key: APIS[key].versions for key in (API_VERSIONS, METADATA, FIND_COORDINATOR, FETCH)}
# librdkafka reads record batches (its "MsgVer2" feature) only from a broker that also lists
# Produce v3+; it is listed for that, and a Produce request closes the connection.
_ADVERTISED = {**_SERVED, PRODUCE: APIS[PRODUCE].versions}


@dataclass(frozen=True)
class PartitionData:
    """One partition's record batches, back to back in one buffer, and where each starts."""

    blob: bytes
    base_offsets: tuple[int, ...]
    positions: tuple[int, ...]  # byte position of each batch; one more entry: the end
    end_offset: int

    def read(self, offset: int, max_bytes: int) -> memoryview:
        """Whole batches from the one holding `offset`, up to `max_bytes` (at least one batch)."""
        if offset >= self.end_offset:
            return memoryview(b"")
        first = max(0, bisect.bisect_right(self.base_offsets, offset) - 1)
        last = first + 1
        while last < len(self.base_offsets) and self.positions[last + 1] - self.positions[first] <= max_bytes:
            last += 1
        return memoryview(self.blob)[self.positions[first]:self.positions[last]]


def build_partition(records: int, record_size: int, first: int = 0, step: int = 1) -> PartitionData:
    """`records` records of `record_size` bytes, in batches of about BATCH_BYTES. Values of 8 bytes
    or more start with a sequence number, as the benchmark's producer stamps them (bench/_verify.py):
    `first`, then every `step`-th (partition p of P holds p, p + P, ...); the rest is random."""
    per_batch = max(1, BATCH_BYTES // (record_size + 10))
    tail = os.urandom(max(0, record_size - HEAD.size))
    short = os.urandom(record_size)

    def value(offset: int) -> bytes:
        return stamp(first + offset * step, tail) if record_size >= HEAD.size else short

    now = int(time.time() * 1000)
    batches, bases, offset = [], [], 0
    while offset < records:
        count = min(per_batch, records - offset)
        batches.append(encode_batch([Record(offset + i, now, None, value(offset + i)) for i in range(count)], offset))
        bases.append(offset)
        offset += count
    positions = [0]
    for batch in batches:
        positions.append(positions[-1] + len(batch))
    return PartitionData(b"".join(batches), tuple(bases), tuple(positions), records)


class _Slice:
    """A records value the codec writes as its own part (length prefix only), sent uncopied."""

    def __init__(self, view: memoryview) -> None:
        self.view = view

    def __len__(self) -> int:
        return len(self.view)


class InstantBroker:
    """Serves one topic of `records` records spread evenly over `partitions`, on 127.0.0.1."""

    def __init__(self, topic: str, partitions: int, records: int, record_size: int) -> None:
        self.topic = topic
        self.topic_id = uuid.uuid4()
        share, extra = divmod(records, partitions)
        self.data = [build_partition(share + (p < extra), record_size, p, partitions) for p in range(partitions)]
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._connections: list[socket.socket] = []

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        self._spawn(self._accept_loop)

    def stop(self) -> None:
        self._stopping.set()
        for sock in [self._listener, *self._connections]:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for thread in self._threads:
            thread.join(timeout=5)

    def wait(self) -> None:
        """Block until `stop` (from a signal handler)."""
        while not self._stopping.wait(0.5):
            pass

    def _spawn(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True, name="instant-broker")
        thread.start()
        self._threads.append(thread)

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._connections.append(conn)
            self._spawn(self._serve, conn)

    def _serve(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while not self._stopping.is_set():
                frame = _recv_frame(conn)
                parts = self._answer(frame) if frame is not None else None
                if parts is None:
                    return
                conn.sendall(_SIZE.pack(sum(len(p) for p in parts)))
                for part in parts:
                    conn.sendall(part.view if isinstance(part, _Slice) else part)

    def _answer(self, frame: bytes) -> list | None:
        """Response parts for one request, or None to close the connection (an API we do not serve)."""
        header, _ = codec.decode_request_header(frame)
        key, version = header.api_key, header.api_version
        if key == API_VERSIONS and not _SERVED[key][0] <= version <= _SERVED[key][1]:
            return codec.encode_response(key, 0, header.correlation_id,
                                         {"error_code": 35, "api_keys": self._api_keys()})
        if key not in _SERVED or not _SERVED[key][0] <= version <= _SERVED[key][1]:
            return None
        _, body = codec.decode_request(frame)
        if key == API_VERSIONS:
            response = {"error_code": 0, "api_keys": self._api_keys(), "throttle_time_ms": 0}
        elif key == METADATA:
            response = self._metadata()
        elif key == FIND_COORDINATOR:
            me = {"node_id": NODE_ID, "host": "127.0.0.1", "port": self.port, "error_code": 0,
                  "error_message": None}
            response = {"throttle_time_ms": 0, **me,
                        "coordinators": [{"key": k, **me} for k in body.get("coordinator_keys") or []]}
        else:
            response = self._fetch(body)
        return codec.encode_response(key, version, header.correlation_id, response)

    @staticmethod
    def _api_keys() -> list[dict]:
        return [{"api_key": k, "min_version": lo, "max_version": hi} for k, (lo, hi) in sorted(_ADVERTISED.items())]

    def _metadata(self) -> dict:
        partitions = [{"error_code": 0, "partition_index": p, "leader_id": NODE_ID, "leader_epoch": 0,
                       "replica_nodes": [NODE_ID], "isr_nodes": [NODE_ID], "offline_replicas": []}
                      for p in range(len(self.data))]
        return {"throttle_time_ms": 0, "cluster_id": "instant-broker", "controller_id": NODE_ID,
                "brokers": [{"node_id": NODE_ID, "host": "127.0.0.1", "port": self.port, "rack": None}],
                "topics": [{"error_code": 0, "name": self.topic, "topic_id": self.topic_id, "is_internal": False,
                            "partitions": partitions, "topic_authorized_operations": -2147483648}],
                "cluster_authorized_operations": -2147483648}

    def _fetch(self, body: dict) -> dict:
        budget = body.get("max_bytes", 0x7FFFFFFF)
        responses, any_data = [], False
        for topic in body["topics"]:
            partitions = []
            for p in topic["partitions"]:
                index = p["partition"]
                known = topic["topic"] == self.topic and 0 <= index < len(self.data)
                entry = {"partition_index": index, "error_code": 0 if known else 3, "high_watermark": -1,
                         "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": [],
                         "preferred_read_replica": -1, "records": b""}
                if known:
                    data = self.data[index]
                    view = data.read(p["fetch_offset"], min(p["partition_max_bytes"], max(budget, 0)))
                    budget -= len(view)
                    any_data = any_data or len(view) > 0
                    entry.update(high_watermark=data.end_offset, last_stable_offset=data.end_offset,
                                 log_start_offset=0, records=_Slice(view) if len(view) else b"")
                partitions.append(entry)
            responses.append({"topic": topic["topic"], "partitions": partitions})
        if not any_data:  # a long poll at the end of the data: wait as a broker would
            self._stopping.wait(min(body.get("max_wait_ms", 0), 500) / 1000)
        return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}


def _recv_frame(conn: socket.socket) -> bytes | None:
    head = _recv_exactly(conn, 4)
    if head is None:
        return None
    (size,) = _SIZE.unpack(head)
    return _recv_exactly(conn, size) if 0 < size <= 16 << 20 else None


def _recv_exactly(conn: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


@contextlib.contextmanager
def instant_broker(topic: str, partitions: int, records: int, record_size: int,
                   timeout_s: float = 60.0) -> Iterator[str]:
    """Run an InstantBroker in a process of its own (as a broker would be, so it does not share
    the client's interpreter) holding `records` records over `partitions`; yield its address."""
    with stand_in_process([__file__, topic, str(partitions), str(records), str(record_size)],
                          "the instant broker", timeout_s) as address:
        yield address


@contextlib.contextmanager
def stand_in_process(args: list[str], name: str, timeout_s: float = 60.0) -> Iterator[str]:
    """Run `python args...`, a stand-in broker that prints its address once it listens; yield
    the address, and stop the process (SIGTERM, then SIGKILL after 10 s) when done."""
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, text=True)
    try:
        ready = select.select([proc.stdout], [], [], timeout_s)[0]
        address = proc.stdout.readline().strip() if ready else ""
        if not address:
            raise RuntimeError(f"{name} did not start within {timeout_s:.0f} s (exit {proc.poll()})")
        yield address
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main(argv: list[str]) -> None:
    """`_instant_broker.py TOPIC PARTITIONS RECORDS RECORD_SIZE`: serve until SIGTERM; prints the address."""
    topic, partitions, records, record_size = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    broker = InstantBroker(topic, partitions, records, record_size)
    signal.signal(signal.SIGTERM, lambda *_: broker.stop())
    broker.start()
    print(broker.bootstrap, flush=True)
    broker.wait()


if __name__ == "__main__":
    main(sys.argv[1:])
