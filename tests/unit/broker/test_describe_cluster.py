"""DescribeCluster (API 60) and Metadata report each live broker's rack, as Kafka's broker
does; DescribeCluster refuses a controller endpoint type with Kafka's codes. Driven through
the dispatcher with encoded frames, over a plain `BrokerServices` holding metadata."""
from __future__ import annotations

import asyncio

import pytest

from rafka.common.errors import ErrorCode
from rafka.common.metadata import BrokerInfo, ClusterMetadata
from rafka.net.handlers import DESCRIBE_CLUSTER, METADATA, RequestDispatcher
from rafka.net.protocol import apis, codec


class Services:
    broker_id = 1001
    auto_create_topics = False

    def __init__(self, controller_id: int = 1002) -> None:
        self.metadata = ClusterMetadata(cluster_id="c-1", controller_id=controller_id, brokers={
            1002: BrokerInfo(1002, "127.0.0.1", 9093, "b"), 1001: BrokerInfo(1001, "127.0.0.1", 9092, "a"),
            1003: BrokerInfo(1003, "127.0.0.1", 9094, None)})


def ask(services: Services, api: int, version: int, body: dict) -> dict:
    dispatcher = RequestDispatcher(services)
    frame = codec.encode_request(api, version, 7, "test", body)
    parts = asyncio.run(dispatcher.handle(memoryview(frame)[4:], "127.0.0.1:5555"))
    return codec.decode_response(api, version, b"".join(bytes(p) for p in parts))[1]


@pytest.mark.parametrize("version", range(apis.DESCRIBE_CLUSTER.versions[0], apis.DESCRIBE_CLUSTER.versions[1] + 1))
def test_describe_cluster_lists_every_broker_with_its_rack(version):
    body = ask(Services(), DESCRIBE_CLUSTER, version, {"include_cluster_authorized_operations": False,
                                                      "endpoint_type": 1})
    assert (body["error_code"], body["cluster_id"], body["controller_id"]) == (0, "c-1", 1002)
    assert [(b["broker_id"], b["port"], b["rack"]) for b in body["brokers"]] == [
        (1001, 9092, "a"), (1002, 9093, "b"), (1003, 9094, None)]


def test_describe_cluster_reports_no_controller_when_it_is_not_a_live_broker():
    body = ask(Services(controller_id=7), DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False,
                                                                "endpoint_type": 1})
    assert body["controller_id"] == -1


@pytest.mark.parametrize("endpoint_type, code, message", [
    (2, ErrorCode.MISMATCHED_ENDPOINT_TYPE, "The request was sent to an endpoint of type BROKER, "
                                            "but we wanted an endpoint of type CONTROLLER"),
    (9, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, "Unsupported endpoint type 9"),
], ids=["controller", "unknown"])
def test_describe_cluster_answers_only_for_the_broker_endpoint_type(endpoint_type, code, message):
    body = ask(Services(), DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False,
                                                "endpoint_type": endpoint_type})
    assert (body["error_code"], body["error_message"], body["brokers"]) == (code, message, [])


@pytest.mark.parametrize("version", [1, 12])
def test_metadata_reports_each_brokers_rack(version):
    body = ask(Services(), METADATA, version, {"topics": [], "allow_auto_topic_creation": False,
                                              "include_topic_authorized_operations": False})
    assert {b["node_id"]: b["rack"] for b in body["brokers"]} == {1001: "a", 1002: "b", 1003: None}
