"""Fixtures of the broker unit tests."""
import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def short_dir():
    """Unix socket paths are limited to 107 bytes: pytest's tmp_path may be longer."""
    path = Path(tempfile.mkdtemp(prefix="rc-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)
