"""Config APIs refuse an illegal topic name with INVALID_TOPIC_EXCEPTION before it reaches
ZooKeeper (found by the live fuzz: a control character in a name failed the coordinator's
ZooKeeper call, and with it the other topics of the same AlterConfigs)."""
from __future__ import annotations

import asyncio

from rafka.common.errors import ErrorCode
from rafka.net.config_handlers import ConfigApis
from rafka.net.group_handlers import RequestContext

TOPIC = 2
BAD = "bad\x01name"
CONTEXT = RequestContext("test", "/127.0.0.1")


class FakeCoordinator:
    """Records what reaches the broker's coordinator; every topic exists with no overrides."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def describe_configs(self, resource_type, name, keys):
        self.asked.append(name)
        return []

    async def topic_overrides(self, topic):
        self.asked.append(topic)
        return {}

    async def alter_topic_configs(self, changes, validate_only):
        self.asked += list(changes)
        return {name: (ErrorCode.NONE, None) for name in changes}


def _resources(*names: str, configs: list | None = None) -> list[dict]:
    return [{"resource_type": TOPIC, "resource_name": n, "configuration_keys": None, "configs": configs or []}
            for n in names]


def test_describe_configs_refuses_an_illegal_topic_name():
    coordinator = FakeCoordinator()
    body = {"resources": _resources(BAD, "good")}
    results = asyncio.run(ConfigApis(coordinator).describe_configs(4, body, CONTEXT))["results"]
    assert [r["error_code"] for r in results] == [ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.NONE]
    assert "illegal" in results[0]["error_message"] and coordinator.asked == ["good"]


def test_alter_configs_refuses_only_the_illegal_topic():
    for incremental in (False, True):
        coordinator = FakeCoordinator()
        configs = [{"name": "retention.ms", "value": "1000", "config_operation": 0}]
        body = {"resources": _resources(BAD, "good", configs=configs), "validate_only": False}
        apis = ConfigApis(coordinator)
        handler = apis.incremental_alter_configs if incremental else apis.alter_configs
        responses = asyncio.run(handler(1, body, CONTEXT))["responses"]
        assert [r["error_code"] for r in responses] == [ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.NONE]
        assert BAD not in coordinator.asked and "good" in coordinator.asked
