"""Log lines that carry identity: `[PartitionReplica orders-3 broker=1] ...`."""
from __future__ import annotations

import logging
import os
from typing import Any, MutableMapping


class Prefixed(logging.LoggerAdapter):
    """Prefixes every message with who is speaking (broker id, partition)."""

    def __init__(self, logger: logging.Logger, prefix: str) -> None:
        super().__init__(logger, {"prefix": prefix})

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        return f"{self.extra['prefix']} {msg}", kwargs


def apply_log_level_from_environment() -> None:
    """`RAFKA_LOG_LEVEL` (DEBUG, INFO, ...) sets the level of rafka's loggers in every process,
    the actors' too: they inherit the environment of the process that started Ray, whose
    workers otherwise show only warnings."""
    level = os.environ.get("RAFKA_LOG_LEVEL")
    root = logging.getLogger()
    if level:
        logging.getLogger("rafka").setLevel(level.upper())
        if not root.handlers:   # (an actor: Ray's workers log through logging's last resort, at WARNING)
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
            root.addHandler(handler)


apply_log_level_from_environment()
