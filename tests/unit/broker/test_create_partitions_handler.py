"""CreatePartitions (API 37) at the front end, every version: the request reaches the broker's
coordinator as `PartitionsSpec`s, a topic named twice is refused once with Kafka's
INVALID_REQUEST, and the coordinator's results come back as sent. Driven through the
dispatcher with encoded frames, over a plain `BrokerServices`."""
from __future__ import annotations

import asyncio

import pytest

from rafka.common.errors import ErrorCode
from rafka.common.metadata import ClusterMetadata
from rafka.coordinator.messages import PartitionsSpec, TopicResult
from rafka.net.handlers import API_VERSIONS, CREATE_PARTITIONS, RequestDispatcher
from rafka.net.protocol import apis, codec

VERSIONS = range(apis.CREATE_PARTITIONS.versions[0], apis.CREATE_PARTITIONS.versions[1] + 1)


class Services:
    broker_id = 0
    auto_create_topics = False
    metadata = ClusterMetadata()

    def __init__(self) -> None:
        self.asked: list[tuple[list[PartitionsSpec], bool, int]] = []

    async def create_partitions(self, specs, validate_only, timeout_ms):
        self.asked.append((specs, validate_only, timeout_ms))
        return [TopicResult(s.name) if s.count > 1 else
                TopicResult(s.name, ErrorCode.INVALID_PARTITIONS, "Topic already has 1 partitions.") for s in specs]


def ask(services: Services, api: int, version: int, body: dict) -> dict:
    frame = codec.encode_request(api, version, 7, "test", body)
    parts = asyncio.run(RequestDispatcher(services).handle(memoryview(frame)[4:], "127.0.0.1:5555"))
    return codec.decode_response(api, version, b"".join(bytes(p) for p in parts))[1]


@pytest.mark.parametrize("version", VERSIONS)
def test_topics_reach_the_coordinator_and_duplicates_are_refused_once(version):
    services = Services()
    body = ask(services, CREATE_PARTITIONS, version, {"timeout_ms": 1500, "validate_only": True, "topics": [
        {"name": "a", "count": 3, "assignments": [{"broker_ids": [0]}, {"broker_ids": [1]}]},
        {"name": "dup", "count": 2, "assignments": None},
        {"name": "b", "count": 1, "assignments": None},
        {"name": "dup", "count": 4, "assignments": None}]})
    assert services.asked == [([PartitionsSpec("a", 3, ((0,), (1,))), PartitionsSpec("b", 1)], True, 1500)]
    assert [(r["name"], r["error_code"], r["error_message"]) for r in body["results"]] == [
        ("a", 0, None), ("b", ErrorCode.INVALID_PARTITIONS, "Topic already has 1 partitions."),
        ("dup", ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")]


def test_only_duplicates_never_ask_the_coordinator():
    services = Services()
    body = ask(services, CREATE_PARTITIONS, 3, {"timeout_ms": 0, "validate_only": False, "topics": [
        {"name": "x", "count": 2, "assignments": None}, {"name": "x", "count": 2, "assignments": None}]})
    assert services.asked == [] and [r["error_code"] for r in body["results"]] == [ErrorCode.INVALID_REQUEST]


def test_api_versions_advertises_create_partitions_0_to_3():
    body = ask(Services(), API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
    assert {(k["min_version"], k["max_version"]) for k in body["api_keys"] if k["api_key"] == 37} == {(0, 3)}
