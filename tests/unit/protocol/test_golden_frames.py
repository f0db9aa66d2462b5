"""Golden frames from real clients (tests/data/golden/, recorded by tools/record_golden.py):
our codec decodes every request and response and encodes each back to the same bytes.

Requests are what kafka-python, confluent-kafka (librdkafka), aiokafka and kcat really send;
responses are what our broker answered them, so re-encoding them byte for byte shows the
decoder keeps everything the encoder wrote (tagged fields, nulls, record bytes).
"""
from __future__ import annotations

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
    again = codec.encode_request(header.api_key, header.api_version, header.correlation_id, header.client_id, body)
    assert again[4:] == exchange.request


@pytest.mark.parametrize("exchange", [c for c in CASES if c.values[0].response is not None])
def test_response_decodes_and_encodes_to_the_same_bytes(exchange):
    correlation_id, body = codec.decode_response(exchange.api_key, exchange.api_version, exchange.response)
    assert correlation_id == exchange.correlation_id
    again = codec.frame_response(exchange.api_key, exchange.api_version, correlation_id, body)
    assert again[4:] == exchange.response
