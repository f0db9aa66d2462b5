"""The recording proxy (tools/record_frames.py) in front of a fake broker: it records each
request with its response, as sent, and points the broker addresses in Metadata at itself."""
from __future__ import annotations

import socketserver
import struct
import threading

import pytest

from rafka.net.client import KafkaConnection
from rafka.net.protocol import codec
from tests.tools import load_tool

METADATA, API_VERSIONS = 3, 18


class _FakeBroker(socketserver.BaseRequestHandler):
    """Answers Metadata v12 naming itself, and ApiVersions; nothing else."""

    def handle(self) -> None:
        sock = self.request
        host, port = sock.getsockname()[:2]
        while head := sock.recv(4, 0x100):  # MSG_WAITALL
            frame = sock.recv(struct.unpack(">i", head)[0], 0x100)
            header, _ = codec.decode_request(frame)
            body = ({"brokers": [{"node_id": 0, "host": host, "port": port, "rack": None}], "cluster_id": "c",
                     "controller_id": 0, "topics": []} if header.api_key == METADATA
                    else {"error_code": 0, "api_keys": []})
            sock.sendall(codec.frame_response(header.api_key, header.api_version, header.correlation_id, body))


@pytest.fixture
def fake_broker():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _FakeBroker)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[:2]
    server.shutdown()
    server.server_close()


def test_proxy_records_exchanges_and_rewrites_broker_addresses(fake_broker):
    tool = load_tool("record_frames")
    with tool.ProxyThread(fake_broker) as proxy:
        with KafkaConnection(*proxy.address) as conn:
            seen = conn.request(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
            conn.request(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert (seen["brokers"][0]["host"], seen["brokers"][0]["port"]) == proxy.address
        # the connection is closed; wait until the proxy has seen it end
    exchanges = proxy.exchanges
    assert [(e.api_key, e.api_version) for e in exchanges] == [(METADATA, 12), (API_VERSIONS, 3)]
    _, recorded = codec.decode_response(METADATA, 12, exchanges[0].response)
    assert (recorded["brokers"][0]["host"], recorded["brokers"][0]["port"]) == tuple(fake_broker)
    assert codec.decode_request(exchanges[1].request)[0].correlation_id == 1
    assert tool.summary(exchanges)["exchanges"] == 2
