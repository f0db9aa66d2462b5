"""A client cannot exhaust the broker's memory or connections (issue 23), on the real broker.

The front end's resident memory (VmRSS of its actor process) is read from /proc while hostile
clients open a thousand connections or announce 100 MiB requests, and a real client
(kafka-python) produces and consumes meanwhile. The per-address limit is tried from
127.0.0.2, which the session's broker limits to three connections
(`max.connections.per.ip.overrides`, tests/conftest.py).
"""
from __future__ import annotations

import resource
import socket
import struct
import threading
from pathlib import Path

import pytest

from rafka.actors.naming import frontend_name
from rafka.net.client import KafkaConnection
from tests.interop.clients import create_topic, kafka_python_consume, kafka_python_produce, make_records
from tests.waiting import wait_until

MIB = 1024 * 1024
API_VERSIONS = 18
LIMITED_SOURCE, LIMITED_CONNECTIONS = "127.0.0.2", 3   # as the session's broker is configured
# What 1,000 idle connections may add to the front end: its per-connection state is a few KiB
# (transport, protocol, an account and a sender task); the kernel's socket buffers are not in RSS.
THOUSAND_CONNECTIONS_RSS_BOUND = 64 * MIB


def frontend(cluster):  # noqa: ANN001, ANN201 - the session's Cluster; a Ray actor handle
    import ray

    broker = next(iter(cluster.brokers.values()))
    return ray.get_actor(frontend_name(broker.broker_id), namespace=cluster.namespace)


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def address(bootstrap: str) -> tuple[str, int]:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    return host, int(port)


def api_versions_frame(correlation_id: int) -> bytes:
    client_id = b"limits"
    body = struct.pack(">hhih", API_VERSIONS, 0, correlation_id, len(client_id)) + client_id
    return struct.pack(">i", len(body)) + body


def read_answer(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            assert chunk, "closed by the broker"
            data += chunk
        return data
    return exactly(struct.unpack(">i", exactly(4))[0])


def round_trip(bootstrap: str, topic: str, count: int = 200, already: int = 0) -> None:
    """kafka-python's producer and consumer, with their defaults, through the broker: `count`
    records after the `already` the topic holds."""
    records = make_records(count)
    kafka_python_produce(bootstrap, topic, records, None)
    got = kafka_python_consume(bootstrap, topic, already + count, timeout_s=120)
    assert [(r.key, r.value) for r in got[already:]] == [(s.key, s.value) for s in records]


@pytest.fixture
def more_files():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_thousand_connections_cost_the_front_end_little_and_clients_are_served(rafka_cluster, more_files):
    import ray

    actor = frontend(rafka_cluster)
    pid = ray.get(actor.pid.remote(), timeout=60)
    topic = "limits-thousand"
    create_topic(rafka_cluster.bootstrap_servers, topic)
    round_trip(rafka_cluster.bootstrap_servers, topic, 10)   # the client's own costs come first
    before = rss_bytes(pid)
    held: list[socket.socket] = []
    try:
        for i in range(1000):
            sock = socket.create_connection(address(rafka_cluster.bootstrap_servers), timeout=60)
            held.append(sock)
            sock.sendall(api_versions_frame(i))
        for sock in held:
            assert read_answer(sock)          # every connection is served, and stays open
        wait_until(lambda: ray.get(actor.connections.remote(), timeout=30)["connections"] >= 1000, timeout_s=60,
                   message="1,000 connections open")
        round_trip(rafka_cluster.bootstrap_servers, topic, already=10)
        grown = rss_bytes(pid) - before
        print(f"front end RSS {before / MIB:.1f} MiB, +{grown / MIB:.1f} MiB with 1,000 connections")
        assert grown < THOUSAND_CONNECTIONS_RSS_BOUND
    finally:
        for sock in held:
            sock.close()
    wait_until(lambda: ray.get(actor.connections.remote(), timeout=30)["connections"] < 10, timeout_s=60,
               message="the connections closed")


def test_announced_100mib_requests_leave_the_front_ends_memory_bounded_and_clients_served(rafka_cluster):
    """256 length prefixes of 100 MiB over 8 connections, then 50 MiB of body on four of them:
    the front end reads at most queued.max.request.bytes (100 MiB) plus one overdraft request
    (socket.request.max.bytes), pauses the rest (TCP holds the senders back), and serves a real
    client meanwhile. Closing the hostile connections frees their accounts."""
    import ray

    actor = frontend(rafka_cluster)
    pid = ray.get(actor.pid.remote(), timeout=60)
    topic = "limits-hostile"
    create_topic(rafka_cluster.bootstrap_servers, topic)
    round_trip(rafka_cluster.bootstrap_servers, topic, 10)
    state = ray.get(actor.connections.remote(), timeout=30)
    limit = state["queued_max_request_bytes"]
    before = rss_bytes(pid)
    bound = before + int(1.25 * (limit + 100 * MIB)) + 32 * MIB
    hostile = [socket.create_connection(address(rafka_cluster.bootstrap_servers), timeout=60) for _ in range(8)]
    sent = [0] * 4
    stop = threading.Event()

    def push(index: int) -> None:
        """Send up to 50 MiB of body; a paused connection's send blocks (TCP backpressure)."""
        sock = hostile[index]
        sock.settimeout(1.0)
        chunk = bytes(MIB)
        while sent[index] < 50 * MIB and not stop.is_set():
            try:
                sent[index] += sock.send(chunk)
            except socket.timeout:
                continue
            except OSError:
                return

    peak = before
    pushers = []
    try:
        for sock in hostile:
            sock.sendall(struct.pack(">i", 100 * MIB) * 32)
        prefixes_only = rss_bytes(pid)
        pushers = [threading.Thread(target=push, args=(i,), daemon=True) for i in range(4)]
        for thread in pushers:
            thread.start()

        def memory_full() -> bool:
            nonlocal peak
            peak = max(peak, rss_bytes(pid))
            return ray.get(actor.connections.remote(), timeout=30)["request_bytes"] >= limit

        wait_until(memory_full, timeout_s=120, message="the hostile bodies fill queued.max.request.bytes")
        round_trip(rafka_cluster.bootstrap_servers, topic, already=10)   # served while the budget is full
        state = ray.get(actor.connections.remote(), timeout=30)
        peak = max(peak, rss_bytes(pid))
        print(f"front end RSS {before / MIB:.1f} MiB before, {prefixes_only / MIB:.1f} MiB with 256 prefixes, "
              f"peak {peak / MIB:.1f} MiB (bound {bound / MIB:.1f} MiB); held {state['request_bytes'] / MIB:.1f} MiB "
              f"(peak {state['request_bytes_peak'] / MIB:.1f}), {state['waiting_for_memory']} paused; "
              f"hostile sent {[s // MIB for s in sent]} MiB")
        assert prefixes_only - before < 16 * MIB
        assert peak <= bound
        assert state["request_bytes_peak"] <= limit + 100 * MIB + 8 * 70 * 1024
        assert state["waiting_for_memory"] >= 1 and sum(sent) < 200 * MIB   # kept paused, not served
    finally:
        stop.set()
        for thread in pushers:
            thread.join(timeout=30)
        for sock in hostile:
            sock.close()
    wait_until(lambda: ray.get(actor.connections.remote(), timeout=30)["request_bytes"] == 0, timeout_s=60,
               message="the hostile requests' memory freed")


def test_the_socket_server_configs_are_described_with_kafkas_types(rafka_cluster):
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

    admin = AdminClient({"bootstrap.servers": rafka_cluster.bootstrap_servers})
    broker = str(next(iter(rafka_cluster.brokers)))
    resource = ConfigResource("broker", broker)
    configs = admin.describe_configs([resource])[resource].result(60)
    assert {n: configs[n].value for n in (
        "socket.request.max.bytes", "queued.max.requests", "queued.max.request.bytes", "max.connections",
        "max.connections.per.ip", "max.connections.per.ip.overrides", "connections.max.idle.ms")} == {
        "socket.request.max.bytes": "104857600", "queued.max.requests": "500",
        "queued.max.request.bytes": "104857600", "max.connections": "2147483647",
        "max.connections.per.ip": "2147483647", "max.connections.per.ip.overrides": "127.0.0.2:3",
        "connections.max.idle.ms": "600000"}
    assert configs["max.connections.per.ip.overrides"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert configs["max.connections"].source == ConfigSource.DEFAULT_CONFIG.value


def test_a_connection_over_max_connections_per_ip_is_closed_at_once(rafka_cluster):
    host, port = address(rafka_cluster.bootstrap_servers)
    held = []
    try:
        for i in range(LIMITED_CONNECTIONS):
            sock = socket.create_connection((host, port), timeout=60, source_address=(LIMITED_SOURCE, 0))
            sock.sendall(api_versions_frame(i))
            assert read_answer(sock)
            held.append(sock)
        extra = socket.create_connection((host, port), timeout=60, source_address=(LIMITED_SOURCE, 0))
        held.append(extra)
        try:
            extra.sendall(api_versions_frame(99))
            assert extra.recv(1) == b""          # closed without an answer
        except ConnectionResetError:
            pass
        with KafkaConnection.to(rafka_cluster.bootstrap_servers) as conn:   # 127.0.0.1 has no such limit
            assert conn.request(API_VERSIONS, 3, {"client_software_name": "limits",
                                                  "client_software_version": "1"})["error_code"] == 0
        held.pop(0).close()

        def one_more_admitted() -> bool:
            sock = socket.create_connection((host, port), timeout=60, source_address=(LIMITED_SOURCE, 0))
            held.append(sock)
            try:
                sock.sendall(api_versions_frame(7))
                return bool(read_answer(sock))
            except (AssertionError, ConnectionResetError):
                return False

        wait_until(one_more_admitted, timeout_s=60, message="a slot for 127.0.0.2 again")
    finally:
        for sock in held:
            sock.close()
