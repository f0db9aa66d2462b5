"""A TCP proxy in front of one broker that loses answers on their way to the client.

How a test makes a producer's acknowledgements go missing while its records are stored (issue
56): the proxy forwards Kafka frames both ways, and when told, drops the answers to the next
`count` Produce requests and then holds every client's requests back (on every connection,
new ones too) until `release()`, so the test can rest, wake or restart the broker in between.
The client sees its in-flight requests time out and retries them, as every idempotent client
does. Frames are only parsed for their size, API key and correlation id.

Threads, one pair per connection; `close()` ends them all.
"""
from __future__ import annotations

import socket
import struct
import threading

PRODUCE = 0


def _read_exact(sock: socket.socket, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _read_frame(sock: socket.socket) -> bytes | None:
    """One size-prefixed Kafka frame (the size included), or None at the end of the stream."""
    head = _read_exact(sock, 4)
    if head is None:
        return None
    body = _read_exact(sock, struct.unpack(">i", head)[0])
    return None if body is None else head + body


class AnswerDropper:
    """Listens on 127.0.0.1:`port`; forwards to `upstream` (set before the first client comes)."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.upstream: tuple[str, int] | None = None
        self._lock = threading.Lock()
        self._to_drop = 0
        self.dropped = 0                  # Produce answers dropped since the last `drop_produce_answers`
        self._open = threading.Event()    # set: requests flow; clear: held back
        self._open.set()
        self._closed = False
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, name="answer-dropper", daemon=True).start()

    def drop_produce_answers(self, count: int) -> None:
        """Drop the answers to the next `count` Produce requests; after the last one, hold
        every request back until `release()`."""
        with self._lock:
            self._to_drop, self.dropped = count, 0

    def release(self) -> None:
        """Let the held requests (the client's retries) through, and everything after them."""
        self._open.set()

    def close(self) -> None:
        self._closed = True
        self._open.set()
        self._listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for s in sockets:
            s.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                broker = socket.create_connection(self.upstream, timeout=5)
                broker.settimeout(None)
            except OSError:   # the broker is down (restarting): the client connects again
                client.close()
                continue
            with self._lock:
                self._sockets += [client, broker]
            kinds: dict[int, int] = {}   # correlation id -> API key of the requests under way
            threading.Thread(target=self._requests, args=(client, broker, kinds), daemon=True).start()
            threading.Thread(target=self._answers, args=(broker, client, kinds), daemon=True).start()

    def _requests(self, client: socket.socket, broker: socket.socket, kinds: dict[int, int]) -> None:
        try:
            while (frame := _read_frame(client)) is not None:
                api_key, _, correlation_id = struct.unpack_from(">hhi", frame, 4)
                kinds[correlation_id] = api_key
                while not self._open.wait(0.1):
                    if self._closed:
                        return
                broker.sendall(frame)
        except OSError:
            pass
        finally:
            client.close()
            broker.close()

    def _answers(self, broker: socket.socket, client: socket.socket, kinds: dict[int, int]) -> None:
        try:
            while (frame := _read_frame(broker)) is not None:
                correlation_id = struct.unpack_from(">i", frame, 4)[0]
                if kinds.pop(correlation_id, None) == PRODUCE and self._drop_this_one():
                    continue
                client.sendall(frame)
        except OSError:
            pass
        finally:
            client.close()
            broker.close()

    def _drop_this_one(self) -> bool:
        with self._lock:
            if self._to_drop <= 0:
                return False
            self._to_drop -= 1
            self.dropped += 1
            if self._to_drop == 0:
                self._open.clear()
            return True
