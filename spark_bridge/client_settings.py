"""`kafka.`-prefixed options → librdkafka settings, so a Spark Kafka job's options table works.

Spark hands `kafka.*` options to the Java client. The bridge runs librdkafka (confluent-kafka),
whose setting names are mostly the Java ones; this module renames the few that differ,
drops the Java-only ones that mean nothing to librdkafka (with a warning; `max.block.ms`
without one, since the bridge's writers honour it themselves), translates a
PLAIN/SCRAM `sasl.jaas.config`, and leaves everything else to librdkafka, which refuses an
unknown name with an error that names it. Pure: no client is created here.
"""
from __future__ import annotations

import logging
import re
from typing import Mapping

from rafka.common.metadata_wait import MAX_BLOCK_MS_DEFAULT

log = logging.getLogger(__name__)

KAFKA_PREFIX = "kafka."

# Java name → librdkafka name (same meaning, same unit).
_RENAMED = {
    "fetch.max.wait.ms": "fetch.wait.max.ms",
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
    "send.buffer.bytes": "socket.send.buffer.bytes",
    "max.request.size": "message.max.bytes",
}
# Java-only settings with no librdkafka counterpart: the bridge does their job itself or
# they only tune the Java client's own machinery.
_IGNORED = frozenset({
    "default.api.timeout.ms", "metadata.max.idle.ms", "exclude.internal.topics",
    "ssl.protocol", "ssl.enabled.protocols", "max.poll.records", "partition.assignment.strategy",
})
# Java producer settings the bridge's writers implement themselves (`max_block_ms` reads it):
# kept from librdkafka, which has no such setting, without a warning.
_BRIDGE_OWN = frozenset({"max.block.ms"})
# Kafka's own default partitioner classes: murmur2 for keys, which the bridge applies itself.
_DEFAULT_PARTITIONERS = frozenset({
    "org.apache.kafka.clients.producer.internals.DefaultPartitioner",
    "org.apache.kafka.clients.producer.internals.BuiltInPartitioner",
})
_JAAS = re.compile(r"""(\w+)\s*=\s*"((?:[^"\\]|\\.)*)\"""")
_JAAS_MODULES = ("PlainLoginModule", "ScramLoginModule")


class ClientSettingError(ValueError):
    """A `kafka.` option that cannot be given to librdkafka; the message names it."""


def strip_prefix(options: Mapping[str, str]) -> dict[str, str]:
    """The `kafka.`-prefixed options without their prefix (Spark's `kafkaParamsForDriver`)."""
    return {k[len(KAFKA_PREFIX):]: v for k, v in options.items() if k.startswith(KAFKA_PREFIX)}


def to_librdkafka(settings: Mapping[str, str]) -> dict[str, str]:
    """Java client settings (prefix already stripped) → librdkafka settings."""
    out: dict[str, str] = {}
    for name, value in settings.items():
        if name in _RENAMED:
            out[_RENAMED[name]] = value
        elif name in _BRIDGE_OWN:
            continue
        elif name in _IGNORED:
            log.warning("kafka.%s is a Java client setting with no librdkafka counterpart; ignored", name)
        elif name == "buffer.memory":
            out["queue.buffering.max.kbytes"] = str(max(1, int(value) // 1024))
        elif name == "partitioner.class":
            if value not in _DEFAULT_PARTITIONERS:
                raise ClientSettingError(f"kafka.partitioner.class={value} is a Java class; only Kafka's default "
                                         "(murmur2) partitioner is available, set kafka.partitioner for librdkafka's")
        elif name == "ssl.endpoint.identification.algorithm" and value == "":
            out[name] = "none"
        elif name == "sasl.jaas.config":
            out.update(_jaas_credentials(value))
        else:
            out[name] = value
    return out


def max_block_ms(settings: Mapping[str, str]) -> int:
    """The Java producer's `max.block.ms` (prefix already stripped; Kafka's default 60000): how
    long a writer waits for a topic's metadata before it fails (rafka.common.metadata_wait)."""
    text = settings.get("max.block.ms")
    if text is None:
        return MAX_BLOCK_MS_DEFAULT
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ClientSettingError(f"kafka.max.block.ms must be a whole number of ms, at least 0; got {text!r}")
    return value


def _jaas_credentials(text: str) -> dict[str, str]:
    """username/password from a PlainLoginModule or ScramLoginModule JAAS line."""
    if not any(module in text for module in _JAAS_MODULES):
        raise ClientSettingError("kafka.sasl.jaas.config: only PlainLoginModule and ScramLoginModule "
                                 "lines translate to librdkafka (use kafka.sasl.username/password)")
    fields = {k: v.replace('\\"', '"') for k, v in _JAAS.findall(text)}
    missing = [k for k in ("username", "password") if k not in fields]
    if missing:
        raise ClientSettingError(f"kafka.sasl.jaas.config has no {' or '.join(missing)}")
    return {"sasl.username": fields["username"], "sasl.password": fields["password"]}
