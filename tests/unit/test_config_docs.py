"""docs/configuration.md is what tools/gen_config_docs.py writes from the config tables, so a
config added, renamed or given another default in the code fails here until the page follows."""
from __future__ import annotations

from rafka.common.config import BROKER_KEYS
from tests.tools import load_tool

GEN = load_tool("gen_config_docs")


def test_the_committed_page_is_the_generated_one() -> None:
    assert GEN.PAGE.read_text() == GEN.page(), "docs/configuration.md is stale: run tools/gen_config_docs.py"


def test_every_broker_and_topic_config_has_a_row() -> None:
    text = GEN.page()
    for key in BROKER_KEYS:
        assert f"| `{key.name}` |" in text
        if key.topic_name:
            assert f"| `{key.topic_name}` | `{key.name}` |" in text
