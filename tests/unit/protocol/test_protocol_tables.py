"""The committed tables equal what tools/gen_protocol.py derives from Kafka's JSON files."""
from __future__ import annotations

from pathlib import Path

import pytest

from rafka.net.protocol.apis import API_BY_NAME, APIS
from rafka.net.protocol.schema import Field
from tests.tools import load_tool

ROOT = Path(__file__).resolve().parents[3]


GEN = load_tool("gen_protocol")
FRESH = GEN.build_apis()


def _diff_fields(path: str, want: tuple[Field, ...], got: tuple[Field, ...]) -> list[str]:
    diffs = []
    if [f.name for f in want] != [f.name for f in got]:
        return [f"{path}: names {[f.name for f in want]} != {[f.name for f in got]}"]
    for w, g in zip(want, got):
        for attr in ("type", "versions", "nullable", "tag", "tagged", "default", "item",
                     "struct_name", "ignorable"):
            if getattr(w, attr) != getattr(g, attr) or type(getattr(w, attr)) is not type(getattr(g, attr)):
                diffs.append(f"{path}.{w.name}.{attr}: JSON {getattr(w, attr)!r} != table {getattr(g, attr)!r}")
        diffs += _diff_fields(f"{path}.{w.name}", w.fields, g.fields)
    return diffs


def test_registry_lists_every_generated_api():
    assert set(API_BY_NAME) == set(GEN.SUPPORTED)
    assert all(APIS[a.key] is a for a in API_BY_NAME.values())


@pytest.mark.parametrize("name", sorted(GEN.SUPPORTED))
def test_table_matches_kafka_json(name):
    want, got = FRESH[name], API_BY_NAME[name]
    assert (got.key, got.versions, got.json_versions, got.flexible_from) == \
        (want.key, want.versions, want.json_versions, want.flexible_from)
    diffs = _diff_fields(f"{name}Request", want.request, got.request)
    diffs += _diff_fields(f"{name}Response", want.response, got.response)
    assert not diffs, "\n".join(diffs)
    assert want == got


@pytest.mark.parametrize("name", sorted(GEN.SUPPORTED))
def test_supported_range_inside_json_valid_versions(name):
    api = API_BY_NAME[name]
    assert api.json_versions[0] <= api.versions[0] <= api.versions[1] <= api.json_versions[1]


def test_committed_sources_are_exactly_the_generator_output():
    rendered = GEN.render_all()
    out_dir = ROOT / "net" / "protocol" / "apis"
    for fname, src in rendered.items():
        assert (out_dir / fname).read_text(encoding="utf-8") == src, f"{fname} is stale: rerun tools/gen_protocol.py"
    assert {p.name for p in out_dir.glob("*.py")} == set(rendered)


def test_produce_exposes_json_minimum_and_generated_header():
    produce = API_BY_NAME["Produce"]
    assert produce.key == 0 and produce.json_versions[0] == 3 and produce.versions == (3, 11)
    text = (ROOT / "net" / "protocol" / "apis" / "produce.py").read_text()
    assert text.startswith("# Generated from Kafka's JSON message definitions")
    assert "KAFKA-18659" in text


def test_snake_case():
    assert GEN.snake_case("TransactionalId") == "transactional_id"
    assert GEN.snake_case("ISRNodes") == "isr_nodes"
    assert GEN.snake_case("ThrottleTimeMs") == "throttle_time_ms"
