"""Frozen values that every layer shares, named in Kafka's words."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

# Kafka's Topic.java: legal characters and the 249-character limit.
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME_LENGTH = 249
OFFSETS_TOPIC = "__consumer_offsets"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, "__transaction_state"})


class TopicPartition(NamedTuple):
    """A partition of a topic. A named tuple, not a dataclass: brokers key dicts and sets of
    thousands of partitions by it, and a tuple hashes, compares and sorts in C (5x faster)."""

    topic: str
    partition: int

    def __str__(self) -> str:  # Kafka's spelling: "orders-3"
        return f"{self.topic}-{self.partition}"

    @classmethod
    def parse(cls, text: str) -> "TopicPartition":
        """Inverse of `str()`: the partition number follows the last dash."""
        topic, _, partition = text.rpartition("-")
        if not topic or not partition.isdigit():
            raise ValueError(f"not a topic-partition: {text!r}")
        return cls(topic, int(partition))


@dataclass(frozen=True)
class Endpoint:
    """One listener of a broker: `PLAINTEXT://127.0.0.1:9092`."""

    listener: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    def __str__(self) -> str:
        return f"{self.listener}://{self.host}:{self.port}"

    @classmethod
    def parse(cls, text: str) -> "Endpoint":
        name, sep, rest = text.strip().partition("://")
        if not sep:
            raise ValueError(f"listener must look like NAME://host:port, got {text!r}")
        host, colon, port = rest.rpartition(":")
        if not colon or not port.isdigit():
            raise ValueError(f"listener must look like NAME://host:port, got {text!r}")
        host = host.strip("[]")
        protocol = name if name in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL") else "PLAINTEXT"
        return cls(name, host, int(port), protocol)


def topic_name_problem(name: str) -> str | None:
    """Why `name` is not a legal Kafka topic name, or None when it is (Kafka's Topic.validate)."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters"
    if not _LEGAL_TOPIC.match(name):
        return (f"Topic name \"{name}\" is illegal, it contains a character other than "
                "ASCII alphanumerics, '.', '_' and '-'")
    return None
