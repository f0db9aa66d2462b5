"""Log lines that carry identity: `[PartitionReplica orders-3 broker=1] ...`."""
from __future__ import annotations

import logging
from typing import Any, MutableMapping


class Prefixed(logging.LoggerAdapter):
    """Prefixes every message with who is speaking (broker id, partition)."""

    def __init__(self, logger: logging.Logger, prefix: str) -> None:
        super().__init__(logger, {"prefix": prefix})

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        return f"{self.extra['prefix']} {msg}", kwargs
