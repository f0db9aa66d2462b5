"""Config defaults are declared once, in the `BROKER_KEYS` table: `BrokerConfig` and `LogConfig`
take theirs from it."""
from __future__ import annotations

from dataclasses import MISSING, fields

import pytest

from rafka.common.config import BROKER_KEYS, BrokerConfig, LogConfig

# BrokerConfig's fields that are not config keys: what parsing recorded.
NOT_KEYS = {"unused", "given"}
KEYS = {key.name: key for key in BROKER_KEYS}


@pytest.mark.parametrize("field", [f for f in fields(BrokerConfig) if f.name not in NOT_KEYS | {"broker_id"}],
                         ids=lambda f: f.name)
def test_every_broker_config_default_is_its_keys_default_in_the_table(field):
    assert field.default is not MISSING
    assert field.default == KEYS[field.name.replace("_", ".")].default


def test_every_key_of_the_table_is_a_broker_config_field():
    names = {f.name for f in fields(BrokerConfig)} - NOT_KEYS
    assert {key.name.replace(".", "_") for key in BROKER_KEYS} == names


def test_broker_id_defaults_to_0_in_broker_config_and_to_kafkas_minus_1_when_parsed():
    """rafka's one departure from the table's default: a BrokerConfig built without broker.id
    (`rafka up`, `Cluster`) numbers its brokers from 0; the table keeps Kafka's -1 (generate)."""
    assert BrokerConfig().broker_id == 0
    assert KEYS["broker.id"].default == -1


def test_a_log_config_of_defaults_is_the_broker_defaults_log_config():
    assert LogConfig() == BrokerConfig().log_config()
    assert LogConfig().segment_bytes == KEYS["log.segment.bytes"].default == 1 << 30
    assert LogConfig().retention_check_interval_ms == KEYS["log.retention.check.interval.ms"].default
