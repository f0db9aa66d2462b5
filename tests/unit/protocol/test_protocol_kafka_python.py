"""Cross-check against kafka-python 3's encoder/decoder, built from the same Kafka JSON files."""
from __future__ import annotations

import uuid

from kafka.protocol.admin import CreateTopicsResponse
from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.metadata import (
    ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse,
)
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from rafka.net.protocol import codec

TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")


def _kp_frame(msg, correlation_id=42, client_id="kafka-python"):
    msg.with_header(correlation_id=correlation_id, client_id=client_id)
    return memoryview(bytes(msg.encode(header=True, framed=True)))


def _ours(frame):
    assert codec.read_frame_size(frame) == len(frame) - 4
    return codec.decode_request(frame[4:])


def test_kafka_python_metadata_v12_request_decodes():
    msg = MetadataRequest[12](
        topics=[MetadataRequest.MetadataRequestTopic(name="orders", topic_id=TOPIC_ID)],
        allow_auto_topic_creation=False, include_topic_authorized_operations=True)
    header, body = _ours(_kp_frame(msg))
    assert header == codec.RequestHeader(3, 12, 42, "kafka-python")
    assert body == {"topics": [{"topic_id": TOPIC_ID, "name": "orders"}],
                    "allow_auto_topic_creation": False,
                    "include_cluster_authorized_operations": False,
                    "include_topic_authorized_operations": True}


def test_kafka_python_metadata_v1_all_topics_is_null():
    header, body = _ours(_kp_frame(MetadataRequest[1](topics=None), client_id=None))
    assert header.client_id is None and header.api_version == 1
    assert body["topics"] is None


def test_kafka_python_produce_v9_request_decodes_records_zero_copy():
    records = b"\x00" * 12 + b"batch-bytes" * 5
    P = ProduceRequest.TopicProduceData
    msg = ProduceRequest[9](transactional_id="tx-1", acks=-1, timeout_ms=30000, topic_data=[
        P(name="orders", partition_data=[P.PartitionProduceData(index=i, records=records)
                                         for i in range(3)])])
    frame = _kp_frame(msg, correlation_id=7)
    header, body = _ours(frame)
    assert (header.api_key, header.api_version, header.correlation_id) == (0, 9, 7)
    assert body["transactional_id"] == "tx-1" and body["acks"] == -1 and body["timeout_ms"] == 30000
    parts = body["topic_data"][0]["partition_data"]
    assert [p["index"] for p in parts] == [0, 1, 2]
    assert all(isinstance(p["records"], memoryview) and bytes(p["records"]) == records for p in parts)
    assert parts[0]["records"].obj is frame.obj  # a slice of the frame, not a copy


def test_kafka_python_fetch_v12_request_decodes():
    T = FetchRequest.FetchTopic
    msg = FetchRequest[12](
        replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, isolation_level=1,
        session_id=11, session_epoch=2, rack_id="rack-a",
        topics=[T(topic="orders", partitions=[T.FetchPartition(
            partition=3, current_leader_epoch=5, fetch_offset=100, last_fetched_epoch=4,
            log_start_offset=-1, partition_max_bytes=1000)])],
        forgotten_topics_data=[FetchRequest.ForgottenTopic(topic="old", partitions=[1, 2])])
    header, body = _ours(_kp_frame(msg))
    assert header.api_version == 12
    assert (body["max_wait_ms"], body["min_bytes"], body["max_bytes"]) == (500, 1, 1 << 20)
    assert (body["isolation_level"], body["session_id"], body["session_epoch"]) == (1, 11, 2)
    assert body["rack_id"] == "rack-a"
    p = body["topics"][0]["partitions"][0]
    assert body["topics"][0]["topic"] == "orders"
    assert (p["partition"], p["current_leader_epoch"], p["fetch_offset"], p["last_fetched_epoch"],
            p["partition_max_bytes"]) == (3, 5, 100, 4, 1000)
    assert body["forgotten_topics_data"] == [{"topic": "old", "topic_id": uuid.UUID(int=0),
                                              "partitions": [1, 2]}]


def test_kafka_python_api_versions_v3_request_decodes():
    msg = ApiVersionsRequest[3](client_software_name="kafka-python", client_software_version="3.0.12")
    header, body = _ours(_kp_frame(msg))
    assert header == codec.RequestHeader(18, 3, 42, "kafka-python")
    assert body == {"client_software_name": "kafka-python", "client_software_version": "3.0.12"}


def _kp_decode(cls, version, frame):
    return cls.decode(frame[4:], version=version, header=True)


def test_api_versions_v3_response_decodes_in_kafka_python():
    frame = codec.frame_response(18, 3, 77, {
        "api_keys": [{"api_key": 0, "min_version": 0, "max_version": 11},
                     {"api_key": 18, "min_version": 0, "max_version": 4}],
        "throttle_time_ms": 5, "finalized_features_epoch": 3,
        "supported_features": [{"name": "metadata.version", "min_version": 1, "max_version": 20}]})
    resp = _kp_decode(ApiVersionsResponse, 3, frame)
    assert resp.header.correlation_id == 77
    assert [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys] == [(0, 0, 11), (18, 0, 4)]
    assert resp.throttle_time_ms == 5 and resp.finalized_features_epoch == 3
    assert resp.supported_features[0].name == "metadata.version"


def _metadata_body():
    return {
        "brokers": [{"node_id": 1, "host": "broker-1", "port": 9092, "rack": "r1"}],
        "cluster_id": "cluster-x", "controller_id": 1,
        "topics": [{"error_code": 0, "name": "orders", "topic_id": TOPIC_ID, "is_internal": False,
                    "partitions": [{"error_code": 0, "partition_index": 0, "leader_id": 1,
                                    "leader_epoch": 4, "replica_nodes": [1, 2], "isr_nodes": [1],
                                    "offline_replicas": [2]}]}]}


def test_metadata_v1_and_v12_responses_decode_in_kafka_python():
    for version in (1, 12):
        resp = _kp_decode(MetadataResponse, version, codec.frame_response(3, version, 5, _metadata_body()))
        assert resp.header.correlation_id == 5
        assert [(b.node_id, b.host, b.port, b.rack) for b in resp.brokers] == [(1, "broker-1", 9092, "r1")]
        assert resp.controller_id == 1
        t = resp.topics[0]
        assert (t.name, t.is_internal) == ("orders", False)
        p = t.partitions[0]
        assert (p.partition_index, p.leader_id, p.replica_nodes, p.isr_nodes) == (0, 1, [1, 2], [1])
        if version == 12:
            assert resp.cluster_id == "cluster-x" and t.topic_id == TOPIC_ID
            assert p.leader_epoch == 4 and p.offline_replicas == [2]


def test_produce_v9_response_decodes_in_kafka_python():
    frame = codec.frame_response(0, 9, 8, {"responses": [{"name": "orders", "partition_responses": [
        {"index": 2, "error_code": 0, "base_offset": 1234, "log_start_offset": 10,
         "record_errors": [{"batch_index": 1, "batch_index_error_message": "bad"}]}]}]})
    resp = _kp_decode(ProduceResponse, 9, frame)
    assert resp.header.correlation_id == 8 and resp.throttle_time_ms == 0
    p = resp.responses[0].partition_responses[0]
    assert (resp.responses[0].name, p.index, p.base_offset, p.log_start_offset) == ("orders", 2, 1234, 10)
    assert p.log_append_time_ms == -1 and p.error_message is None
    assert (p.record_errors[0].batch_index, p.record_errors[0].batch_index_error_message) == (1, "bad")


def test_fetch_v11_response_decodes_in_kafka_python():
    records = b"\x01" * 70
    frame = codec.frame_response(1, 11, 3, {"session_id": 9, "responses": [{"topic": "orders", "partitions": [
        {"partition_index": 0, "high_watermark": 100, "last_stable_offset": 90, "log_start_offset": 0,
         "aborted_transactions": [{"producer_id": 5, "first_offset": 80}],
         "preferred_read_replica": -1, "records": records}]}]})
    resp = _kp_decode(FetchResponse, 11, frame)
    assert resp.header.correlation_id == 3 and resp.session_id == 9
    p = resp.responses[0].partitions[0]
    assert (p.high_watermark, p.last_stable_offset) == (100, 90)
    assert [(a.producer_id, a.first_offset) for a in p.aborted_transactions] == [(5, 80)]
    assert bytes(p.records) == records


def test_create_topics_v5_response_decodes_in_kafka_python():
    frame = codec.frame_response(19, 5, 4, {"throttle_time_ms": 1, "topics": [
        {"name": "orders", "error_code": 0, "error_message": None, "topic_config_error_code": 0,
         "num_partitions": 3, "replication_factor": 2,
         "configs": [{"name": "retention.ms", "value": "1000", "read_only": False,
                      "config_source": 1, "is_sensitive": False}]}]})
    resp = _kp_decode(CreateTopicsResponse, 5, frame)
    t = resp.topics[0]
    assert resp.header.correlation_id == 4 and resp.throttle_time_ms == 1
    assert (t.name, t.num_partitions, t.replication_factor) == ("orders", 3, 2)
    assert (t.configs[0].name, t.configs[0].value) == ("retention.ms", "1000")
