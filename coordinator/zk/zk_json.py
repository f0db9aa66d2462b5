"""What every znode codec shares: compact JSON as Kafka (Jackson) writes it, read back as an
object or a clear ValueError, and Kafka's `Uuid` as text. Pure functions."""
from __future__ import annotations

import base64
import json
import uuid
from typing import Any

__all__ = ["ZERO_UUID", "uuid_to_kafka", "uuid_from_kafka", "new_kafka_uuid"]

ZERO_UUID = uuid.UUID(int=0)  # Kafka's Uuid.ZERO_UUID: "no topic id"
_METADATA_TOPIC_ID = uuid.UUID(int=1)  # Uuid.METADATA_TOPIC_ID, never handed out


def dumps(value: Any) -> bytes:
    """Compact JSON, as Jackson writes it: `{"version":1,...}`."""
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def loads(data: bytes | None, what: str) -> dict[str, Any]:
    """The JSON object in `data`; ValueError naming `what` when it is not one."""
    try:
        value = json.loads((data or b"").decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"Failed to parse ZooKeeper data of {what}: {data!r}") from e
    if not isinstance(value, dict):
        raise ValueError(f"Failed to parse ZooKeeper data of {what}: {data!r}")
    return value


# ---- Kafka's Uuid: 16 bytes as unpadded URL-safe base64, 22 characters ------------------
def uuid_to_kafka(value: uuid.UUID) -> str:
    """Kafka's `Uuid.toString()`: `"MvDxzVmcRsaTz33bUuRU6A"`."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def uuid_from_kafka(text: str) -> uuid.UUID:
    """Inverse of `uuid_to_kafka` (Kafka's `Uuid.fromString`)."""
    if len(text) != 22:
        raise ValueError(f"Input string with prefix {text[:22]!r} is not a 22-character base64 Kafka Uuid")
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def new_kafka_uuid() -> uuid.UUID:
    """Kafka's `Uuid.randomUuid()`: never the zero or metadata id, never a string starting with '-'."""
    while True:
        value = uuid.uuid4()
        if value not in (ZERO_UUID, _METADATA_TOPIC_ID) and not uuid_to_kafka(value).startswith("-"):
            return value
