"""Which DataFrame columns a Kafka write takes, and their types: Spark's KafkaWriter rules.

`value` (string or binary) is required; `key` (string or binary), `topic` (string),
`partition` (int) and `headers` (array<struct<key:string,value:binary>>) are optional;
other columns are ignored, as Spark ignores them. A row needs a topic: the `topic`
option (which wins over the column) or a non-null `topic` column. Pure: types arrive as
Spark's simple strings.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

_ALLOWED = {
    "value": ("string", "binary"),
    "key": ("string", "binary"),
    "topic": ("string",),
    "partition": ("int",),
    "headers": ("array<struct<key:string,value:binary>>",),
}


class SinkSchemaError(ValueError):
    """A DataFrame a Kafka write cannot take; the message names the column."""


@dataclass(frozen=True)
class SinkColumns:
    """Positions of the columns a write uses (None where the DataFrame has no such column)."""

    value: int
    key: int | None = None
    topic: int | None = None
    partition: int | None = None
    headers: int | None = None


def sink_columns(types: Mapping[str, str], topic_option: str | None) -> SinkColumns:
    """Check a DataFrame's columns (name → Spark simple type, in column order) for a write."""
    lower = {name.lower(): (i, kind) for i, (name, kind) in enumerate(types.items())}
    if "value" not in lower:
        raise SinkSchemaError("Required attribute 'value' not found")
    if "topic" not in lower and topic_option is None:
        raise SinkSchemaError("topic option required when no 'topic' attribute is present. "
                              "Use the topic option for setting a topic.")
    found: dict[str, int] = {}
    for name, allowed in _ALLOWED.items():
        if name not in lower:
            continue
        index, kind = lower[name]
        if kind.replace(" ", "") not in allowed:
            raise SinkSchemaError(f"{name} attribute type must be {' or '.join(allowed)}, not {kind}")
        found[name] = index
    return SinkColumns(**found)
