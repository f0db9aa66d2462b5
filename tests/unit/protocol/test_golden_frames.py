"""Golden frames from real clients (tests/data/golden/, recorded by tools/record_golden.py):
our codec decodes every request and response and encodes each back to the same bytes.

Requests are what kafka-python, confluent-kafka (librdkafka), aiokafka and kcat really send;
responses are what our broker answered them, so re-encoding them byte for byte shows the
decoder keeps everything the encoder wrote (tagged fields, nulls, record bytes).

Bytes after a request's body are ignored, by Kafka's parsers and ours: librdkafka 2.16 sends
three (01 00 00) after the body of its all-topics Metadata v12 request. So a request must
re-encode to its own bytes up to the end of its body, and only a few bytes may follow.
"""
from __future__ import annotations

import struct

import pytest

from rafka.net.protocol import codec
from rafka.net.protocol.apis import APIS
from tests.frame_mutations import GOLDEN_DIR, golden_exchanges

CLIENTS = ("kafka-python", "confluent-kafka", "aiokafka", "kcat")
# What every client's ordinary work must have exercised, so a recording that silently lost
# most of a session fails here rather than testing little.
REQUIRED = {"ApiVersions", "Metadata", "Produce", "Fetch", "ListOffsets"}
REQUIRED_WITH_GROUPS = REQUIRED | {"FindCoordinator", "JoinGroup", "SyncGroup", "OffsetCommit", "OffsetFetch",
                                   "LeaveGroup", "CreateTopics", "DescribeConfigs", "InitProducerId"}
MAX_TOTAL_BYTES = 2 * 1024 * 1024
MAX_TRAILING_BYTES = 8
ALL_CODECS = {0, 1, 2, 3, 4}  # none, gzip, snappy, lz4, zstd: the low bits of a batch's attributes

EXCHANGES = golden_exchanges()
CASES = [pytest.param(e, id=f"{client}-{i}-{APIS[e.api_key].name}-v{e.api_version}")
         for client, exchanges in EXCHANGES.items() for i, e in enumerate(exchanges)]


def test_every_client_was_recorded_doing_its_ordinary_work():
    assert set(EXCHANGES) == set(CLIENTS)
    for client, exchanges in EXCHANGES.items():
        names = {APIS[e.api_key].name for e in exchanges}
        required = REQUIRED if client == "kcat" else REQUIRED_WITH_GROUPS
        assert required <= names, f"{client} lacks {sorted(required - names)}"


def test_golden_files_stay_small():
    total = sum(p.stat().st_size for p in GOLDEN_DIR.rglob("*") if p.is_file())
    assert 0 < total <= MAX_TOTAL_BYTES


@pytest.mark.parametrize("exchange", CASES)
def test_request_decodes_and_encodes_to_the_same_bytes(exchange):
    header, body = codec.decode_request(exchange.request)
    assert (header.api_key, header.api_version) == (exchange.api_key, exchange.api_version)
    again = codec.encode_request(header.api_key, header.api_version, header.correlation_id, header.client_id, body)[4:]
    assert exchange.request[:len(again)] == again
    assert len(exchange.request) - len(again) <= MAX_TRAILING_BYTES


def test_every_client_produced_with_every_codec():
    for client, exchanges in EXCHANGES.items():
        codecs = set()
        for e in exchanges:
            if e.api_key == 0:
                body = codec.decode_request(e.request)[1]
                codecs |= {struct.unpack_from(">h", p["records"], 21)[0] & 7
                           for t in body["topic_data"] for p in t["partition_data"] if p["records"]}
        assert codecs == ALL_CODECS, client


@pytest.mark.parametrize("exchange", [c for c in CASES if c.values[0].response is not None])
def test_response_decodes_and_encodes_to_the_same_bytes(exchange):
    correlation_id, body = codec.decode_response(exchange.api_key, exchange.api_version, exchange.response)
    assert correlation_id == exchange.correlation_id
    again = codec.frame_response(exchange.api_key, exchange.api_version, correlation_id, body)
    assert again[4:] == exchange.response
