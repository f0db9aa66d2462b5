"""ConnectionQuotas and the socket-server configs: Kafka's names, defaults, checks and messages."""
from __future__ import annotations

import pytest

from rafka.common.config import BrokerConfig
from rafka.common.errors import InvalidConfigError
from rafka.common.topic_configs import ConfigSource, ConfigType, describe_broker
from rafka.net.connection_quotas import ConnectionQuotas, normalized
from rafka.net.socket_settings import SocketServerSettings, resolve_overrides


def test_an_address_over_its_limit_is_refused_and_others_are_not():
    quotas = ConnectionQuotas(max_connections=10, max_per_ip=2, overrides={"127.0.0.2": 1})
    assert quotas.admit("127.0.0.1") and quotas.admit("127.0.0.1")
    assert not quotas.admit("127.0.0.1")
    assert quotas.admit("::ffff:127.0.0.2")           # the same address, IPv4-mapped
    assert not quotas.admit("127.0.0.2")
    assert quotas.total == 3 and quotas.by_ip == {"127.0.0.1": 2, "127.0.0.2": 1}
    quotas.closed("127.0.0.1")
    assert quotas.admit("127.0.0.1")


def test_at_max_connections_nothing_more_is_accepted_until_one_closes():
    quotas = ConnectionQuotas(max_connections=2, max_per_ip=100)
    assert quotas.admit("10.0.0.1") and quotas.admit("10.0.0.2")
    assert quotas.at_max()
    quotas.closed("10.0.0.1")
    assert not quotas.at_max()


def test_zero_per_ip_with_an_override_admits_only_the_overridden_address():
    quotas = ConnectionQuotas(max_connections=100, max_per_ip=0, overrides={"10.1.1.1": 5})
    assert not quotas.admit("10.9.9.9")
    assert quotas.admit("10.1.1.1")


def test_normalized_addresses():
    assert normalized("::ffff:10.0.0.1") == "10.0.0.1"
    assert normalized("0:0:0:0:0:0:0:1") == "::1"
    assert normalized("fe80::1%eth0") == "fe80::1"
    assert normalized("broker-1") == "broker-1"


def test_socket_server_configs_have_kafkas_names_defaults_and_types():
    settings = SocketServerSettings.from_config(BrokerConfig())
    assert settings == SocketServerSettings()
    assert (settings.max_request_bytes, settings.queued_max_requests, settings.max_connections,
            settings.max_connections_per_ip, settings.connections_max_idle_ms) == (
        104_857_600, 500, 2_147_483_647, 2_147_483_647, 600_000)
    # rafka bounds request memory by default (Kafka's -1 is unbounded): one largest request's worth.
    assert settings.queued_max_request_bytes == 104_857_600
    entries = {e.name: e for e in describe_broker(BrokerConfig())}
    assert {name: entries[name].type for name in (
        "socket.request.max.bytes", "queued.max.requests", "queued.max.request.bytes", "max.connections",
        "max.connections.per.ip", "max.connections.per.ip.overrides", "connections.max.idle.ms")} == {
        "socket.request.max.bytes": ConfigType.INT, "queued.max.requests": ConfigType.INT,
        "queued.max.request.bytes": ConfigType.LONG, "max.connections": ConfigType.INT,
        "max.connections.per.ip": ConfigType.INT, "max.connections.per.ip.overrides": ConfigType.STRING,
        "connections.max.idle.ms": ConfigType.LONG}
    assert entries["queued.max.request.bytes"].source is ConfigSource.DEFAULT_CONFIG
    given = BrokerConfig.from_mapping({"max.connections.per.ip": "0",
                                       "max.connections.per.ip.overrides": "127.0.0.2:3, localhost:7"})
    described = {e.name: e for e in describe_broker(given)}
    assert described["max.connections.per.ip.overrides"].value == "127.0.0.2:3, localhost:7"
    assert described["max.connections.per.ip"].source is ConfigSource.STATIC_BROKER_CONFIG


@pytest.mark.parametrize("props, message", [
    ({"max.connections.per.ip": "0"},
     "max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set."),
    ({"queued.max.request.bytes": "1000"},
     "queued.max.request.bytes must be larger or equal to socket.request.max.bytes"),
    ({"max.connections.per.ip.overrides": "host:many"}, "For input string: \"many\""),
    ({"max.connections.per.ip.overrides": "bad/host:3"},
     "max.connections.per.ip.overrides contains invalid addresses : bad/host"),
    ({"queued.max.requests": "0"}, "Value must be at least 1"),
    ({"max.connections": "-1"}, "Value must be at least 0"),
], ids=["zero-per-ip", "queued-bytes-below-request-max", "override-count", "override-address",
        "queued-requests", "max-connections"])
def test_socket_server_configs_kafka_refuses_are_refused(props, message):
    with pytest.raises(InvalidConfigError, match=message.replace(".", r"\.")):
        BrokerConfig.from_mapping(props)


def test_unbounded_queued_bytes_is_accepted_as_in_kafka():
    assert BrokerConfig.from_mapping({"queued.max.request.bytes": "-1"}).queued_max_request_bytes == -1


def test_override_host_names_are_resolved_to_their_addresses():
    resolved = resolve_overrides("localhost:7,10.0.0.9:2,no-such-host.invalid:4")
    assert resolved["127.0.0.1"] == 7 and resolved["10.0.0.9"] == 2
    assert "no-such-host.invalid" not in resolved
