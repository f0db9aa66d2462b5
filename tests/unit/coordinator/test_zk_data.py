"""Znode JSON round trips and Kafka 3.9's exact key sets (kafka.zk.ZkData)."""
from __future__ import annotations

import json
import uuid

import pytest

from rafka.common.types import Endpoint, TopicPartition
from rafka.coordinator.zk import zk_data as zd
from rafka.coordinator.zk.zk_data import BrokerRegistration, PartitionState, TopicAssignment


def test_paths_are_kafkas():
    assert zd.broker_path(3) == "/brokers/ids/3"
    assert zd.topic_path("orders") == "/brokers/topics/orders"
    assert zd.partition_state_path("orders", 2) == "/brokers/topics/orders/partitions/2/state"
    assert zd.topic_config_path("orders") == "/config/topics/orders"
    assert zd.delete_topic_path("orders") == "/admin/delete_topics/orders"
    assert zd.CONTROLLER_PATH == "/controller" and zd.CONTROLLER_EPOCH_PATH == "/controller_epoch"
    assert zd.BROKER_SEQID_PATH == "/brokers/seqid"
    assert zd.ISR_CHANGE_NOTIFICATION_PATH == "/isr_change_notification"
    assert zd.LATEST_PRODUCER_ID_BLOCK_PATH == "/latest_producer_id_block"
    assert "/config/topics" in zd.PERSISTENT_PATHS and "/admin/delete_topics" in zd.PERSISTENT_PATHS


def test_kafka_uuid_is_22_char_unpadded_base64url_and_round_trips():
    for _ in range(200):
        u = zd.new_kafka_uuid()
        text = zd.uuid_to_kafka(u)
        assert len(text) == 22 and "=" not in text and not text.startswith("-")
        assert zd.uuid_from_kafka(text) == u
    # Kafka's own example: Uuid(MSB, LSB) printed as base64url of the 16 bytes.
    assert zd.uuid_to_kafka(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"
    with pytest.raises(ValueError):
        zd.uuid_from_kafka("short")


def test_cluster_id_json_has_string_version():
    cid = zd.new_cluster_id()
    raw = json.loads(zd.encode_cluster_id(cid))
    assert raw == {"version": "1", "id": cid}
    assert zd.decode_cluster_id(zd.encode_cluster_id(cid)) == cid


def test_broker_registration_v5_key_set_without_rack():
    reg = BrokerRegistration(0, (Endpoint("PLAINTEXT", "127.0.0.1", 9092),))
    raw = json.loads(zd.encode_broker(reg, timestamp_ms=1700000000000))
    assert raw == {
        "features": {}, "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "endpoints": ["PLAINTEXT://127.0.0.1:9092"], "jmx_port": -1, "port": 9092,
        "host": "127.0.0.1", "version": 5, "timestamp": "1700000000000",
    }
    assert zd.decode_broker(0, zd.encode_broker(reg)) == reg


def test_broker_registration_with_rack_and_several_listeners_round_trips():
    reg = BrokerRegistration(7, (Endpoint("INTERNAL", "10.0.0.1", 9093, "SASL_PLAINTEXT"),
                                 Endpoint("PLAINTEXT", "::1", 9092)), rack="r1")
    raw = json.loads(zd.encode_broker(reg))
    assert raw["rack"] == "r1"
    assert raw["host"] == "::1" and raw["port"] == 9092  # first PLAINTEXT endpoint
    assert raw["endpoints"] == ["INTERNAL://10.0.0.1:9093", "PLAINTEXT://[::1]:9092"]
    assert raw["listener_security_protocol_map"] == {"INTERNAL": "SASL_PLAINTEXT", "PLAINTEXT": "PLAINTEXT"}
    back = zd.decode_broker(7, zd.encode_broker(reg))
    assert back == reg and back.endpoint("INTERNAL").security_protocol == "SASL_PLAINTEXT"


def test_broker_without_plaintext_endpoint_writes_null_host():
    reg = BrokerRegistration(1, (Endpoint("SSL", "h", 9093, "SSL"),))
    raw = json.loads(zd.encode_broker(reg))
    assert raw["host"] is None and raw["port"] == -1


def test_decodes_a_registration_written_by_kafka():
    kafka = (b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
             b'"endpoints":["PLAINTEXT://localhost:9092"],"jmx_port":-1,"port":9092,'
             b'"host":"localhost","version":5,"timestamp":"1712345678901"}')
    reg = zd.decode_broker(0, kafka)
    assert reg.endpoints == (Endpoint("PLAINTEXT", "localhost", 9092, "PLAINTEXT"),)
    assert reg.rack is None and reg.timestamp_ms == 1712345678901


def test_controller_json_v2():
    raw = json.loads(zd.encode_controller(2, timestamp_ms=123))
    assert raw == {"version": 2, "brokerid": 2, "timestamp": "123", "kraftControllerEpoch": -1}
    assert zd.decode_controller(zd.encode_controller(2)) == 2
    assert zd.decode_controller(b'{"version":1,"brokerid":5,"timestamp":"1"}') == 5


def test_controller_epoch_is_plain_text():
    assert zd.encode_controller_epoch(12) == b"12"
    assert zd.decode_controller_epoch(b"12") == 12


def test_topic_assignment_v3_key_set_and_round_trip():
    tid = zd.new_kafka_uuid()
    a = TopicAssignment("orders", tid, {0: (1, 2, 3), 1: (2, 3, 1)})
    raw = json.loads(zd.encode_topic(a))
    assert raw == {"partitions": {"0": [1, 2, 3], "1": [2, 3, 1]}, "topic_id": zd.uuid_to_kafka(tid),
                   "adding_replicas": {}, "removing_replicas": {}, "version": 3}
    assert zd.decode_topic("orders", zd.encode_topic(a)) == a


def test_topic_reassignment_fields_round_trip_and_legacy_topic_has_zero_id():
    a = TopicAssignment("t", zd.new_kafka_uuid(), {0: (1, 2, 3)}, adding_replicas={0: (3,)},
                        removing_replicas={0: (1,)})
    assert zd.decode_topic("t", zd.encode_topic(a)) == a
    legacy = zd.decode_topic("t", b'{"version":1,"partitions":{"0":[1]}}')
    assert legacy.topic_id == zd.ZERO_UUID and legacy.partitions == {0: (1,)}


def test_partition_state_v1_key_set():
    st = PartitionState(leader=1, leader_epoch=0, isr=(1, 2), controller_epoch=3)
    raw = json.loads(zd.encode_partition_state(st))
    assert raw == {"controller_epoch": 3, "leader": 1, "version": 1, "leader_epoch": 0, "isr": [1, 2]}
    assert zd.decode_partition_state(zd.encode_partition_state(st), zk_version=4) == \
        PartitionState(1, 0, (1, 2), 3, zk_version=4)


def test_partition_state_writes_leader_recovery_state_only_when_recovering():
    st = PartitionState(2, 5, (2,), 1, leader_recovery_state=zd.LEADER_RECOVERY_RECOVERING)
    raw = json.loads(zd.encode_partition_state(st))
    assert raw["leader_recovery_state"] == 1 and raw["version"] == 1
    assert zd.decode_partition_state(zd.encode_partition_state(st)) == st


def test_topic_config_values_are_strings():
    raw = json.loads(zd.encode_topic_config({"retention.ms": 1000, "cleanup.policy": "compact", "preallocate": True}))
    assert raw == {"version": 1, "config": {"retention.ms": "1000", "cleanup.policy": "compact",
                                            "preallocate": "true"}}
    assert zd.decode_topic_config(zd.encode_topic_config({"a": "b"})) == {"a": "b"}
    assert zd.decode_topic_config(b"") == {}


def test_isr_change_and_producer_id_block_round_trip():
    tps = {TopicPartition("a", 0), TopicPartition("b", 3)}
    raw = json.loads(zd.encode_isr_change(tps))
    assert raw["version"] == 1 and {"topic": "a", "partition": 0} in raw["partitions"]
    assert zd.decode_isr_change(zd.encode_isr_change(tps)) == tps
    block = zd.ProducerIdBlock(1, 1000, 1000)
    assert json.loads(zd.encode_producer_id_block(block)) == {
        "version": 1, "broker": 1, "block_start": "1000", "block_end": "1999"}
    assert zd.decode_producer_id_block(zd.encode_producer_id_block(block)) == block


def test_garbage_is_refused_with_a_value_error():
    with pytest.raises(ValueError):
        zd.decode_broker(0, b"not json")
    with pytest.raises(ValueError):
        zd.decode_topic("t", b"[1,2]")


def test_log_dir_event_is_kafkas_json_and_offline_replicas_round_trip():
    assert json.loads(zd.encode_log_dir_event(3)) == {"version": 1, "broker": 3, "event": 1}
    assert zd.decode_log_dir_event(zd.encode_log_dir_event(3, zd.REPLICAS_ONLINE_EVENT)) == 3
    assert zd.LOG_DIR_EVENT_NOTIFICATION_PATH + "/" + zd.LOG_DIR_EVENT_PREFIX == "/log_dir_event_notification/log_dir_event_"
    tps = {TopicPartition("a", 0), TopicPartition("b", 3)}
    assert zd.decode_offline_replicas(zd.encode_offline_replicas(tps)) == tps
    assert zd.decode_offline_replicas(zd.encode_offline_replicas(())) == frozenset()
    assert zd.offline_replicas_path(2) == "/brokers/offline_replicas/2"


AREAS = ["zk_paths", "zk_json", "zk_cluster_data", "zk_topic_data", "zk_notification_data"]


@pytest.mark.parametrize("area", AREAS)
def test_zk_data_gathers_every_public_name_each_area_module_defines(area):
    import ast
    import importlib
    module = importlib.import_module(f"rafka.coordinator.zk.{area}")
    tree = ast.parse(open(module.__file__).read())
    defined = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    defined |= {target.id for node in tree.body if isinstance(node, ast.Assign) for target in node.targets}
    defined |= {node.target.id for node in tree.body if isinstance(node, ast.AnnAssign)}
    public = {name for name in defined if not name.startswith("_")} - {"dumps", "loads"}  # zk_json's, for codecs
    assert public == set(module.__all__)
    assert all(getattr(zd, name) is getattr(module, name) for name in module.__all__)
    for other in AREAS:
        if other != area:
            assert not public & set(importlib.import_module(f"rafka.coordinator.zk.{other}").__all__)
