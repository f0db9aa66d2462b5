"""Spark's Kafka source schema, column for column (KafkaRecordToRowConverter in Spark)."""
from __future__ import annotations

from typing import Mapping

KAFKA_COLUMNS = ("key binary, value binary, topic string, partition int, offset long, "
                 "timestamp timestamp, timestampType int")
HEADERS_COLUMN = "headers array<struct<key: string, value: binary>>"


def kafka_schema(include_headers: bool) -> str:
    """The source schema as DDL; `headers` comes last and only with includeHeaders=true."""
    return f"{KAFKA_COLUMNS}, {HEADERS_COLUMN}" if include_headers else KAFKA_COLUMNS


def includes_headers(options: Mapping[str, str]) -> bool:
    """The includeHeaders option, read before the full option check (Spark asks for the
    schema first); a bad value is reported by the full check."""
    return {k.lower(): str(v) for k, v in options.items()}.get("includeheaders", "false").strip().lower() == "true"
