"""A failing call to the broker's coordinator (its actor dead, ZooKeeper's connection lost inside
it, or no answer in time) is answered with the request's error codes, as Kafka answers them,
never by closing the client's connection: UNKNOWN_SERVER_ERROR for a failure, REQUEST_TIMED_OUT
when the call outlives its bound, COORDINATOR_NOT_AVAILABLE for FindCoordinator. The dispatcher
of a real `Frontend` is driven through `handle`, over a coordinator handle (our own seam) whose
calls fail the way Ray's handle fails them."""
from __future__ import annotations

import asyncio

import pytest
from ray.exceptions import ActorDiedError

from rafka.common.errors import ErrorCode
from rafka.net.frontend_actor import Frontend
from rafka.net.protocol import codec
from rafka.net.protocol.apis import (
    ALTER_CONFIGS, CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_CONFIGS, FIND_COORDINATOR, INCREMENTAL_ALTER_CONFIGS,
)


class _Method:
    def __init__(self, failure: str) -> None:
        self._failure = failure

    def remote(self, *_args, **_kwargs):
        async def call():
            if self._failure == "dead":
                raise ActorDiedError()
            if self._failure == "zookeeper":
                raise RuntimeError("kazoo.exceptions.ConnectionLoss")  # what the actor's method raised
            await asyncio.Event().wait()  # never answers
        return call()


class FailingCoordinator:
    def __init__(self, failure: str) -> None:
        self._failure = failure

    def __getattr__(self, _name: str) -> _Method:
        return _Method(self._failure)


REQUESTS = {
    "create-topics": (CREATE_TOPICS.key, 5, {"topics": [{"name": "t", "num_partitions": 1, "replication_factor": 1,
                                                         "assignments": [], "configs": []}],
                                             "timeout_ms": 100, "validate_only": False}),
    "delete-topics": (DELETE_TOPICS.key, 4, {"topic_names": ["t"], "timeout_ms": 100}),
    "describe-configs": (DESCRIBE_CONFIGS.key, 4, {"resources": [
        {"resource_type": 2, "resource_name": "t", "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": False}),
    "alter-configs": (ALTER_CONFIGS.key, 1, {"resources": [
        {"resource_type": 2, "resource_name": "t", "configs": [{"name": "retention.ms", "value": "1"}]}],
        "validate_only": False}),
    "incremental-alter-configs": (INCREMENTAL_ALTER_CONFIGS.key, 1, {"resources": [
        {"resource_type": 2, "resource_name": "t",
         "configs": [{"name": "retention.ms", "config_operation": 0, "value": "1"}]}], "validate_only": False}),
    "find-coordinator": (FIND_COORDINATOR.key, 3, {"key": "g", "key_type": 0}),
}


def error_codes(key: int, body: dict) -> list[int]:
    if key == CREATE_TOPICS.key:
        return [t["error_code"] for t in body["topics"]]
    if key == DELETE_TOPICS.key:
        return [t["error_code"] for t in body["responses"]]
    if key == DESCRIBE_CONFIGS.key:
        return [r["error_code"] for r in body["results"]]
    if key in (ALTER_CONFIGS.key, INCREMENTAL_ALTER_CONFIGS.key):
        return [r["error_code"] for r in body["responses"]]
    return [body["error_code"]]


FAILURES = {"dead": ErrorCode.UNKNOWN_SERVER_ERROR, "zookeeper": ErrorCode.UNKNOWN_SERVER_ERROR,
            "silent": ErrorCode.REQUEST_TIMED_OUT}
# FindCoordinator waits up to 30 s for __consumer_offsets' leaders before its bound: not "silent" here.
CASES = [(r, f) for r in REQUESTS for f in FAILURES if (r, f) != ("find-coordinator", "silent")]


@pytest.mark.parametrize("request_name, failure", CASES)
def test_a_failing_coordinator_call_is_answered_with_an_error_code(request_name: str, failure: str) -> None:
    key, version, body = REQUESTS[request_name]
    expected = ErrorCode.COORDINATOR_NOT_AVAILABLE if key == FIND_COORDINATOR.key else FAILURES[failure]

    async def scenario() -> dict:
        frontend = Frontend(0, "127.0.0.1", 0, FailingCoordinator(failure), control_timeout_ms=200)
        frame = codec.encode_request(key, version, 3, "test", body)
        parts = await asyncio.wait_for(frontend._dispatcher.handle(memoryview(frame)[4:], "127.0.0.1:5555"), 10)
        return codec.decode_response(key, version, b"".join(bytes(p) for p in parts))[1]

    assert error_codes(key, asyncio.run(scenario())) == [expected]
