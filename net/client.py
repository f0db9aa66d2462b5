"""A small blocking Kafka-protocol client, for tools, tests and the Spark bridge.

Not a full Kafka client: one connection to one broker, requests encoded by the same
codec the broker uses, and answers matched by correlation id. Pipelining is allowed:
`send` several requests, then `receive` them in order.
"""
from __future__ import annotations

import socket
import struct
from collections import deque
from typing import Any

from rafka.net.protocol import codec

_SIZE = struct.Struct(">i")


class KafkaConnection:
    def __init__(self, host: str, port: int, *, client_id: str = "rafka-client", timeout_s: float = 30.0) -> None:
        self._sock = socket.create_connection((host, port), timeout=timeout_s)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._client_id = client_id
        self._next_id = 0
        self._in_flight: deque[tuple[int, int, int]] = deque()

    @classmethod
    def to(cls, address: str, **kwargs: Any) -> "KafkaConnection":
        host, _, port = address.split(",")[0].rpartition(":")
        return cls(host, int(port), **kwargs)

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> "KafkaConnection":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def send(self, api_key: int, api_version: int, body: dict, *, expect_response: bool = True) -> int:
        """Send one request without waiting; returns its correlation id."""
        correlation_id = self._next_id
        self._next_id += 1
        self._sock.sendall(codec.encode_request(api_key, api_version, correlation_id, self._client_id, body))
        if expect_response:
            self._in_flight.append((correlation_id, api_key, api_version))
        return correlation_id

    def send_raw(self, payload: bytes) -> None:
        """Send bytes as they are (malformed-frame tests)."""
        self._sock.sendall(payload)

    def receive(self) -> tuple[int, dict]:
        """The next response, in request order: (correlation id, body)."""
        expected_id, api_key, api_version = self._in_flight.popleft()
        frame = self.read_frame()
        correlation_id, body = codec.decode_response(api_key, api_version, frame)
        if correlation_id != expected_id:
            raise ConnectionError(f"response correlation id {correlation_id}, expected {expected_id}")
        return correlation_id, body

    def request(self, api_key: int, api_version: int, body: dict) -> dict:
        self.send(api_key, api_version, body)
        return self.receive()[1]

    def read_frame(self) -> bytes:
        (size,) = _SIZE.unpack(self._recv_exactly(4))
        return self._recv_exactly(size)

    def _recv_exactly(self, n: int) -> bytes:
        chunks, got = [], 0
        while got < n:
            chunk = self._sock.recv(min(n - got, 1 << 20))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)
