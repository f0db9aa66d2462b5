"""RAFKA_LOG_LEVEL reaches processes that never configured logging (Ray's actor workers)."""
from __future__ import annotations

import os
import subprocess
import sys

SPEAK = ("import logging, rafka.common.logging_util; "
         "logging.getLogger('rafka.coordinator.x').info('info line'); "
         "logging.getLogger('rafka.net.y').debug('debug line'); "
         "logging.getLogger('other').info('not ours')")


def _stderr(level: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "RAFKA_LOG_LEVEL"}
    if level is not None:
        env["RAFKA_LOG_LEVEL"] = level
    return subprocess.run([sys.executable, "-c", SPEAK], env=env, capture_output=True, text=True,
                          check=True).stderr


def test_info_level_shows_rafka_info_lines_with_their_logger_name():
    err = _stderr("info")
    assert "INFO rafka.coordinator.x: info line" in err
    assert "debug line" not in err and "not ours" not in err


def test_without_it_only_warnings_would_show():
    assert _stderr(None) == ""
