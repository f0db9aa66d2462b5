"""Round trip every request and response of every API at every version in our range."""
from __future__ import annotations

import pytest

from rafka.net.protocol import codec
from rafka.net.protocol.apis import APIS

from _protocol_examples import cases, example_body, expected_decoded, materialize

CASES = cases(APIS.values())


@pytest.mark.parametrize("api,version,is_request", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
@pytest.mark.parametrize("nulls", [False, True], ids=["values", "nulls"])
def test_round_trip(api, version, is_request, nulls):
    fields = api.request if is_request else api.response
    body = example_body(fields, version, nulls)
    want = expected_decoded(fields, version, body)
    if is_request:
        frame = codec.encode_request(api.key, version, 12345, "client-é", body)
        assert codec.read_frame_size(frame) == len(frame) - 4
        header, got = codec.decode_request(memoryview(frame)[4:])
        assert header == codec.RequestHeader(api.key, version, 12345, "client-é")
        assert header.supported
    else:
        parts = codec.encode_response(api.key, version, 54321, body)
        assert all(isinstance(p, (bytes, bytearray)) for p in parts)
        frame = codec.frame_response(api.key, version, 54321, body)
        assert frame[4:] == b"".join(parts)
        corr, got = codec.decode_response(api.key, version, frame[4:])
        assert corr == 54321
    assert materialize(got) == want


@pytest.mark.parametrize("api,version,is_request", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_empty_body_encodes_defaults(api, version, is_request):
    """A handler may omit fields (throttle_time_ms, ...): they take the table's defaults."""
    fields = api.request if is_request else api.response
    want = expected_decoded(fields, version, {})
    if is_request:
        _, got = codec.decode_request(memoryview(codec.encode_request(api.key, version, 1, None, {}))[4:])
    else:
        _, got = codec.decode_response(api.key, version, codec.frame_response(api.key, version, 1, {})[4:])
    assert materialize(got) == want
