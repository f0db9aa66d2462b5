"""Which broker.id a broker starts under (Kafka's getOrGenerateBrokerId and its config checks):
the configured one, else the log dirs' meta.properties, else a generated one; refusals with
Kafka's messages. Pure: files in tmp_path, no ZooKeeper (the sequence id is tested against a
real one in tests/cluster/test_broker_ids_and_racks.py)."""
from __future__ import annotations

import pytest

from rafka.common.config import BrokerConfig
from rafka.common.errors import InvalidConfigError, StartupError
from rafka.partition_worker.log_dirs import check_meta_properties, choose_broker_id, stored_broker_ids

MISMATCH = ("Stored node id {stored} doesn't match previous node id {expected} in {path}. If you moved your data, "
            "make sure your configured node id matches. If you intend to create a new node, you should remove all "
            "data in your data directories.")


@pytest.mark.parametrize("configured, stored, generation, expected", [
    (5, {}, True, 5),                                   # configured, fresh disks
    (5, {"/a/meta.properties": 5}, True, 5),            # configured and stored agree
    (5, {"/a/meta.properties": None}, False, 5),        # a meta.properties without broker.id
    (-1, {"/a/meta.properties": 1001}, True, 1001),     # -1: the stored id
    (-1, {"/a/meta.properties": 1001}, False, 1001),    # ... also without generation
    (-1, {"/a/meta.properties": None, "/b/meta.properties": 7}, True, 7),
    (-1, {}, True, None),                               # -1, nothing stored: generate
    (-1, {"/a/meta.properties": None}, True, None),
], ids=["configured", "agree", "stored-without-id", "stored", "stored-no-generation", "second-dir",
        "generate", "generate-empty-meta"])
def test_choose_broker_id(configured, stored, generation, expected):
    assert choose_broker_id(configured, stored, generation) == expected


@pytest.mark.parametrize("configured, stored, message", [
    (5, {"/a/meta.properties": 1001}, MISMATCH.format(stored=1001, expected=5, path="/a/meta.properties")),
    (-1, {"/a/meta.properties": 1001, "/b/meta.properties": 1002},
     MISMATCH.format(stored=1002, expected=1001, path="/b/meta.properties")),
    (3, {"/a/meta.properties": 3, "/b/meta.properties": 4}, MISMATCH.format(stored=4, expected=3, path="/b/meta.properties")),
], ids=["configured-vs-stored", "dirs-disagree", "second-dir-disagrees"])
def test_a_log_dir_of_another_broker_is_refused_with_kafkas_message(configured, stored, message):
    with pytest.raises(StartupError) as e:
        choose_broker_id(configured, stored, True)
    assert str(e.value) == message


def test_no_id_anywhere_and_generation_disabled_is_refused():
    with pytest.raises(StartupError, match="No broker ID found, and broker.id.generation.enable is disabled"):
        choose_broker_id(-1, {}, False)


def test_stored_broker_ids_reads_every_log_dir_in_path_order(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    check_meta_properties(b, 1001, "cluster-A")
    a.mkdir()
    (c / "meta.properties").parent.mkdir()
    (c / "meta.properties").write_text("version=0\ncluster.id=cluster-A\n")
    stored = stored_broker_ids([str(c), str(b), str(a)])
    assert list(stored.items()) == [(str(a / "meta.properties"), None), (str(b / "meta.properties"), 1001),
                                    (str(c / "meta.properties"), None)]
    assert choose_broker_id(-1, stored, True) == 1001


def test_broker_id_config_keys_and_kafkas_defaults():
    config = BrokerConfig.from_mapping({"broker.id": "-1"})
    assert (config.broker_id, config.broker_id_generation_enable, config.reserved_broker_max_id) == (-1, True, 1000)
    # Without broker.id rafka numbers its brokers from 0 (`rafka up`, Cluster), not Kafka's -1.
    assert BrokerConfig.from_mapping({}).broker_id == BrokerConfig().broker_id == 0
    assert BrokerConfig.from_mapping({"broker.id": "1000"}).broker_id == 1000
    assert BrokerConfig.from_mapping({"broker.id": "5000", "reserved.broker.max.id": "5000"}).broker_id == 5000
    assert BrokerConfig.from_mapping({"broker.id": "5000", "broker.id.generation.enable": "false"}).broker_id == 5000


@pytest.mark.parametrize("props, message", [
    ({"broker.id": "1001"}, "broker.id must be greater than or equal to -1 and not greater than reserved.broker.max.id"),
    ({"broker.id": "-2"}, "broker.id must be greater than or equal to -1 and not greater than reserved.broker.max.id"),
    ({"broker.id": "11", "reserved.broker.max.id": "10"}, "not greater than reserved.broker.max.id"),
    ({"broker.id": "-1", "broker.id.generation.enable": "false"}, "broker.id must be greater than or equal to 0"),
    ({"reserved.broker.max.id": "-1"}, "Value must be at least 0"),
], ids=["above-reserved", "below-minus-one", "above-own-reserved", "minus-one-without-generation",
        "negative-reserved"])
def test_broker_id_refusals_with_kafkas_messages(props, message):
    with pytest.raises(InvalidConfigError, match=message):
        BrokerConfig.from_mapping(props)


def test_describe_broker_lists_the_new_keys():
    from rafka.common.topic_configs import ConfigType, describe_broker

    entries = {e.name: e for e in describe_broker(BrokerConfig(), ["broker.id.generation.enable",
                                                                   "reserved.broker.max.id"])}
    assert (entries["broker.id.generation.enable"].value, entries["broker.id.generation.enable"].type) == \
        ("true", ConfigType.BOOLEAN)
    assert (entries["reserved.broker.max.id"].value, entries["reserved.broker.max.id"].type) == ("1000", ConfigType.INT)
