"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs: topic configs, as kafka-configs.sh
and the admin clients use them.

Topics are described with every topic config, its source and synonyms (rafka/common/topic_configs.py);
altering a topic writes its overrides to ZooKeeper through the broker's coordinator, which
notifies every broker, and the topic's replicas apply the new config at once (retention,
roll, flush, cleaner, timestamps). Broker configs can be described but not altered: rafka has
no dynamic broker configs, so altering one gets INVALID_REQUEST.
"""
from __future__ import annotations

from typing import Any, Protocol

from rafka.common.errors import ErrorCode, KafkaError
from rafka.common.topic_configs import ConfigEntry, apply_incremental
from rafka.common.types import topic_name_problem
from rafka.net.group_handlers import RequestContext
from rafka.net.protocol import apis

# API keys, from the registry of the protocol tables.
DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = (
    apis.DESCRIBE_CONFIGS.key, apis.ALTER_CONFIGS.key, apis.INCREMENTAL_ALTER_CONFIGS.key)
CONFIG_APIS = (DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS)
TOPIC, BROKER = 2, 4


class ConfigServices(Protocol):
    """The broker's coordinator as these handlers see it. `describe_configs` and `topic_overrides`
    raise a KafkaError when the call fails (answered as that resource's error code);
    `alter_topic_configs` reports failures per topic."""

    async def describe_configs(self, resource_type: int, name: str,
                               keys: list[str] | None) -> list[ConfigEntry] | None: ...

    async def topic_overrides(self, topic: str) -> dict[str, str] | None: ...

    async def alter_topic_configs(self, changes: dict[str, dict[str, str]],
                                  validate_only: bool) -> dict[str, tuple[ErrorCode, str | None]]: ...


def _entry(entry: ConfigEntry, version: int, synonyms: bool, documentation: bool) -> dict[str, Any]:
    return {"name": entry.name, "value": entry.value, "read_only": entry.read_only,
            "config_source": entry.source, "is_default": entry.source == 5, "is_sensitive": entry.sensitive,
            "synonyms": [{"name": s.name, "value": s.value, "source": s.source} for s in entry.synonyms]
            if synonyms else [],
            "config_type": entry.type, "documentation": entry.documentation if documentation else None}


class ConfigApis:
    def __init__(self, services: ConfigServices) -> None:
        self._services = services

    def handlers(self) -> dict:
        return {DESCRIBE_CONFIGS: self.describe_configs, ALTER_CONFIGS: self.alter_configs,
                INCREMENTAL_ALTER_CONFIGS: self.incremental_alter_configs}

    async def describe_configs(self, version: int, body: dict, context: RequestContext) -> dict:
        results = []
        for r in body["resources"]:
            kind, name, keys = r["resource_type"], r["resource_name"], r.get("configuration_keys")
            result = {"resource_type": kind, "resource_name": name, "error_code": 0, "error_message": None,
                      "configs": []}
            if kind not in (TOPIC, BROKER):
                result.update(error_code=ErrorCode.INVALID_REQUEST,
                              error_message=f"Unsupported resource type {kind}")
            elif kind == TOPIC and (problem := topic_name_problem(name)) is not None:
                result.update(error_code=ErrorCode.INVALID_TOPIC_EXCEPTION, error_message=problem)
            else:
                try:
                    entries = await self._services.describe_configs(kind, name, keys)
                except KafkaError as e:  # the broker's coordinator failed or timed out
                    result.update(error_code=e.code, error_message=str(e))
                    results.append(result)
                    continue
                if entries is None:
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if kind == TOPIC else ErrorCode.INVALID_REQUEST
                    result.update(error_code=code, error_message=(
                        f"Topic {name} does not exist" if kind == TOPIC else f"Unknown broker {name}"))
                else:
                    result["configs"] = [_entry(e, version, body.get("include_synonyms", False),
                                                body.get("include_documentation", False)) for e in entries]
            results.append(result)
        return {"throttle_time_ms": 0, "results": results}

    async def alter_configs(self, version: int, body: dict, context: RequestContext) -> dict:
        """The legacy API: each resource's configs replace all its overrides."""
        changes = {r["resource_name"]: {c["name"]: c["value"] for c in r["configs"] if c["value"] is not None}
                   for r in body["resources"] if r["resource_type"] == TOPIC}
        return await self._alter(body, changes, {})

    async def incremental_alter_configs(self, version: int, body: dict, context: RequestContext) -> dict:
        changes: dict[str, dict[str, str]] = {}
        refused: dict[str, tuple[ErrorCode, str]] = {}
        for r in body["resources"]:
            if r["resource_type"] != TOPIC:
                continue
            name = r["resource_name"]
            if (problem := topic_name_problem(name)) is not None:
                refused[name] = (ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
                continue
            try:
                current = await self._services.topic_overrides(name)
            except KafkaError as e:  # the broker's coordinator failed or timed out
                refused[name] = (e.code, str(e))
                continue
            if current is None:
                refused[name] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist")
                continue
            try:
                changes[name] = apply_incremental(current, [(c["name"], c["config_operation"], c["value"])
                                                            for c in r["configs"]])
            except KafkaError as e:
                refused[name] = (e.code, str(e))
        return await self._alter(body, changes, refused)

    async def _alter(self, body: dict, changes: dict[str, dict[str, str]],
                     refused: dict[str, tuple[ErrorCode, str]]) -> dict:
        # Kafka validates each topic's name first (Topic.validate): an illegal one never reaches
        # ZooKeeper, where it is no valid path and would fail the other topics' changes too.
        for name in [n for n in changes if topic_name_problem(n) is not None]:
            refused[name] = (ErrorCode.INVALID_TOPIC_EXCEPTION, topic_name_problem(name))
            del changes[name]
        done = await self._services.alter_topic_configs(changes, body["validate_only"]) if changes else {}
        responses = []
        for r in body["resources"]:
            kind, name = r["resource_type"], r["resource_name"]
            if kind != TOPIC:
                code, message = ErrorCode.INVALID_REQUEST, (
                    "rafka has no dynamic broker configs: set them in server.properties" if kind == BROKER
                    else f"Unsupported resource type {kind}")
            else:
                code, message = refused.get(name) or done.get(name) or (ErrorCode.NONE, None)
            responses.append({"error_code": code, "error_message": message, "resource_type": kind,
                              "resource_name": name})
        return {"throttle_time_ms": 0, "responses": responses}
