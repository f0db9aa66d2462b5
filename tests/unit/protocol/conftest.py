"""Make the protocol tests' helper modules (`_protocol_examples`) importable."""
from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


def pytest_configure(config):
    # kafka-python 3 loads its JSON schemas with the deprecated importlib.resources API.
    config.addinivalue_line("filterwarnings", "ignore:open_text is deprecated:DeprecationWarning")
    config.addinivalue_line("filterwarnings", "ignore:read_text is deprecated:DeprecationWarning")
