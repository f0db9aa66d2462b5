#!/usr/bin/env python3
"""Generate rafka's protocol tables (`net/protocol/apis/*.py`) from Kafka's JSON definitions.

The JSON message definitions ship with kafka-python >= 3 as package data
(`kafka/protocol/schemas/resources/*.json`, Apache Kafka's own files with `//` comments).
Each API becomes one small module defining `<NAME> = Api(...)`; `apis/__init__.py` holds the
registries `APIS` (api key -> Api) and `API_BY_NAME`. The JSON's comments (version history,
quirks) are kept as comments next to the tables.

Usage: `python tools/gen_protocol.py [--check]` (with --check: exit 1 if the committed files
differ from what would be generated). `tests/unit/protocol/test_tables.py` regenerates the
tables in memory and compares them with the committed ones.
"""
from __future__ import annotations

import argparse
import importlib.resources
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # allow running as a script from a checkout

from rafka.net.protocol.schema import (  # noqa: E402
    ARRAY, PRIMITIVES, STRUCT, UNSET, Api, Field, parse_versions,
)

OUT_DIR = ROOT / "net" / "protocol" / "apis"
RESOURCES = "kafka.protocol.schemas.resources"

# Our supported version range per API, a subset of the JSON's validVersions. The generator
# clamps each to what the JSON declares and notes the clamp in the generated module.
SUPPORTED: dict[str, tuple[int, int]] = {
    "ApiVersions": (0, 4),        # v3 is the first flexible version; v4 only widens error handling
    "Metadata": (0, 12),          # v13 adds a top-level error code (KIP-1102) clients don't need yet
    "Produce": (3, 11),           # v3 = message format v2 baseline; v12 needs transactions V2, v13 topic ids.
                                  # The front-end advertises 0-2 but refuses them (KAFKA-18659).
    "Fetch": (4, 12),             # v4 = first version with message format v2 only; v13+ use topic ids
    "ListOffsets": (1, 8),        # v9+ need remote-storage offsets / KIP-1005 timestamps
    "CreateTopics": (2, 7),       # the full JSON range
    "DeleteTopics": (1, 6),       # the full JSON range
    "CreatePartitions": (0, 3),   # the full JSON range
    "DescribeConfigs": (1, 4),    # the full JSON range
    "AlterConfigs": (0, 2),       # the full JSON range
    "IncrementalAlterConfigs": (0, 1),  # the full JSON range
    "FindCoordinator": (0, 4),    # v4 = batched coordinator keys (KIP-699); v5/v6 are transactions V2 / share groups
    "JoinGroup": (0, 9),          # the full JSON range
    "SyncGroup": (0, 5),          # the full JSON range
    "Heartbeat": (0, 4),          # the full JSON range
    "LeaveGroup": (0, 5),         # the full JSON range
    "OffsetCommit": (2, 9),       # v10 uses topic ids
    "OffsetFetch": (1, 9),        # v10 uses topic ids
    "ListGroups": (0, 5),         # the full JSON range
    "DescribeGroups": (0, 5),     # v6 adds KIP-1043 error messages per group
    "DeleteGroups": (0, 2),       # the full JSON range
    "OffsetDelete": (0, 0),       # the full JSON range
    "InitProducerId": (0, 5),     # v6 is KIP-939 two-phase commit (unstable in the JSON)
    "SaslHandshake": (0, 1),      # the full JSON range
    "SaslAuthenticate": (0, 2),   # the full JSON range
    "DescribeCluster": (0, 1),    # v2 adds controller endpoints for KRaft clients only
    "ElectLeaders": (0, 2),       # preferred and unclean leader election (kafka-leader-election.sh)
    "DeleteRecords": (0, 2),      # the full JSON range
    "OffsetForLeaderEpoch": (2, 4),  # v2 = first version with the current leader epoch
    "AlterReplicaLogDirs": (0, 2),   # the full range of Kafka 3.9 (kafka-reassign-partitions.sh's log_dirs)
    "DescribeLogDirs": (0, 4),       # Kafka 3.9's range; v5 adds KIP-1066 cordoned log dirs
    "WriteTxnMarkers": (0, 1),       # Kafka 3.9's range; v2 adds KIP-1228 transaction versions
    "AddPartitionsToTxn": (0, 4),    # v4 = brokers' batched and verify-only form (KIP-890); v5 adds TRANSACTION_ABORTABLE
    "AddOffsetsToTxn": (0, 4),       # Kafka 3.9's range; v4 adds TRANSACTION_ABORTABLE
    "EndTxn": (0, 4),                # Kafka 3.9's range; v5 is transactions V2 (KIP-890 part 2)
    "TxnOffsetCommit": (0, 4),       # Kafka 3.9's range; v5 is transactions V2 (KIP-890 part 2)
}

# APIs whose version 0 Kafka 4.0 removed from the JSON although it is "the same as version 1"
# (the JSON's own words): Kafka 3.9 still serves it, so the generator puts it back.
RESTORED_V0 = {"AlterReplicaLogDirs", "DescribeLogDirs", "WriteTxnMarkers"}

HEADER = (
    "# Generated from Kafka's JSON message definitions ({src}) by tools/gen_protocol.py.\n"
    "# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.\n"
)

_COMMENT_RE = re.compile(r"(?m)^\s*//.*\n?")


def snake_case(name: str) -> str:
    """Kafka's CamelCase JSON name to our dict key: "TransactionalId" -> "transactional_id"."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def module_name(api_name: str) -> str:
    return snake_case(api_name)


def const_name(api_name: str) -> str:
    return snake_case(api_name).upper()


def read_json_text(file_name: str) -> str:
    return importlib.resources.files(RESOURCES).joinpath(file_name).read_text(encoding="utf-8")


def load_message(file_name: str) -> tuple[dict, str]:
    """Parse one JSON definition (comments stripped); returns (json, raw text)."""
    text = read_json_text(file_name)
    return json.loads(_COMMENT_RE.sub("", text)), text


def _comment_blocks(text: str) -> tuple[list[str], dict[int, list[str]]]:
    """The message-level comments, and the comments placed before each field.

    Returns (comments before the first field, minus the licence; {n: comments before the
    nth `{ "name": ...` line}), n counting fields in document (pre-order) order.
    """
    top: list[str] = []
    before: dict[int, list[str]] = {}
    pending: list[str] = []
    seen_brace = False
    n_fields = -1
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("//"):
            pending.append(s[2:].rstrip())
            continue
        if not seen_brace:
            seen_brace = s.startswith("{")
            pending = []  # the licence
            continue
        if s.startswith("{") and '"name"' in s:
            n_fields += 1
            if pending:
                before[n_fields] = pending
            pending = []
        elif pending and n_fields == -1:
            top.extend(pending)
            pending = []
    return top, before


def _parse_default(ftype: str, raw: Any) -> Any:
    if isinstance(raw, bool) or isinstance(raw, (int, float)):
        return raw
    raw = str(raw)
    if raw == "null":
        return None
    if ftype == "bool":
        return raw.lower() == "true"
    if ftype in ("int8", "int16", "int32", "int64", "uint16"):
        return int(raw, 0)
    if ftype == "float64":
        return float(raw)
    if ftype == "string":
        return raw
    raise ValueError(f"cannot parse default {raw!r} for {ftype}")


def build_field(j: dict, common: dict[str, list]) -> Field:
    """One JSON field (recursively) to a `Field`."""
    jt = j["type"]
    item = None
    fields: tuple[Field, ...] = ()
    struct_name = None
    if jt.startswith("[]"):
        ftype = ARRAY
        inner = jt[2:]
        if inner in PRIMITIVES:
            item = inner
        else:
            struct_name = inner
            sub = j.get("fields", common.get(inner))
            if sub is None:
                raise ValueError(f"unknown struct {inner}")
            fields = tuple(build_field(s, common) for s in sub)
    elif jt in PRIMITIVES:
        ftype = jt
    else:
        ftype = STRUCT
        struct_name = jt
        sub = j.get("fields", common.get(jt))
        if sub is None:
            raise ValueError(f"unknown struct {jt}")
        fields = tuple(build_field(s, common) for s in sub)
    if j.get("flexibleVersions") not in (None, "none"):
        raise ValueError(f"field-level flexibleVersions {j['flexibleVersions']} unsupported")
    if ftype == STRUCT and j.get("nullableVersions", "none") != "none":
        raise ValueError("nullable structs are not supported by the codec")
    default = UNSET
    if "default" in j and ftype not in (ARRAY, STRUCT):
        default = _parse_default(jt, j["default"])
    return Field(
        name=snake_case(j["name"]),
        type=ftype,
        versions=j["versions"],
        nullable=j.get("nullableVersions", "none"),
        tag=j.get("tag"),
        tagged=j.get("taggedVersions", "none"),
        default=default,
        item=item,
        fields=fields,
        struct_name=struct_name,
        ignorable=bool(j.get("ignorable", False)),
    )


def clamp(name: str, json_range: tuple[int, int]) -> tuple[tuple[int, int], str | None]:
    lo, hi = SUPPORTED[name]
    clo, chi = max(lo, json_range[0]), min(hi, json_range[1])
    note = None
    if (clo, chi) != (lo, hi):
        note = (f"our range {lo}-{hi} clamped to {clo}-{chi}, the JSON's validVersions "
                f"{json_range[0]}-{json_range[1]}")
    return (clo, chi), note


def build_api(name: str) -> tuple[Api, dict]:
    """Build one `Api` from <name>Request.json and <name>Response.json.

    Returns the Api and the material for its module's comments.
    """
    req, req_text = load_message(f"{name}Request.json")
    resp, resp_text = load_message(f"{name}Response.json")
    if req["apiKey"] != resp["apiKey"]:
        raise ValueError(name)
    json_range = parse_versions(req["validVersions"])
    assert json_range is not None
    restored = name in RESTORED_V0 and json_range[0] == 1
    if restored:
        json_range = (0, json_range[1])
    versions, note = clamp(name, json_range)
    flex = parse_versions(req["flexibleVersions"])
    flex_resp = parse_versions(resp["flexibleVersions"])
    if flex != flex_resp:
        raise ValueError(f"{name}: request/response flexibleVersions differ")
    common_req = {c["name"]: c["fields"] for c in req.get("commonStructs", [])}
    common_resp = {c["name"]: c["fields"] for c in resp.get("commonStructs", [])}
    api = Api(
        key=req["apiKey"],
        name=name,
        versions=versions,
        json_versions=json_range,
        flexible_from=flex[0] if flex else None,
        request=tuple(build_field(f, common_req) for f in req["fields"]),
        response=tuple(build_field(f, common_resp) for f in resp["fields"]),
    )
    if restored:
        same = "v1's fields, not flexible" if flex and flex[0] == 1 else "the same as v1"
        note = f"v0 ({same}) restored: Kafka 3.9 serves it" + (f"; {note}" if note else "")
    meta = {"note": note, "req": (req, req_text), "resp": (resp, resp_text)}
    return api, meta


def build_apis() -> dict[str, Api]:
    """All our APIs, keyed by Kafka name, built in memory from the JSON (used by the tests)."""
    return {name: build_api(name)[0] for name in SUPPORTED}


# ---------------------------------------------------------------- source rendering

def _fmt_field(f: Field, indent: int, comments: dict[int, list[str]], counter: list[int]) -> str:
    pad = " " * indent
    counter[0] += 1
    out = []
    for c in comments.get(counter[0], []):
        out.append(f"{pad}#{c}" if c.strip() else f"{pad}#")
    args = [repr(f.name), f.type.upper()]
    if f.versions != "0+":
        args.append(f"versions={f.versions!r}")
    if f.nullable != "none":
        args.append(f"nullable={f.nullable!r}")
    if f.tag is not None:
        args.append(f"tag={f.tag}")
        args.append(f"tagged={f.tagged!r}")
    if f.default is not UNSET:
        args.append(f"default={f.default!r}")
    if f.item is not None:
        args.append(f"item={f.item.upper()}")
    if f.ignorable:
        args.append("ignorable=True")
    if f.struct_name is not None:
        args.append(f"struct_name={f.struct_name!r}")
    if f.fields:
        inner = ",\n".join(_fmt_field(c, indent + 4, comments, counter) for c in f.fields)
        out.append(f"{pad}Field({', '.join(args)}, fields=[\n{inner},\n{pad}])")
    else:
        out.append(f"{pad}Field({', '.join(args)})")
    return "\n".join(out)


def _fmt_fields(fields: tuple[Field, ...], comments: dict[int, list[str]]) -> str:
    counter = [-1]
    return ",\n".join(_fmt_field(f, 8, comments, counter) for f in fields)


def _comment_lines(lines: list[str], prefix: str = "") -> str:
    return "".join(f"#{prefix}{c}\n" if c.strip() else "#\n" for c in lines)


def render_api(api: Api, meta: dict) -> str:
    """The source of `net/protocol/apis/<name>.py`."""
    req_json, req_text = meta["req"]
    resp_json, resp_text = meta["resp"]
    req_top, req_comments = _comment_blocks(req_text)
    resp_top, resp_comments = _comment_blocks(resp_text)
    # Field comments are matched by document order, which common structs would disturb.
    if "commonStructs" in req_json:
        req_comments = {}
    if "commonStructs" in resp_json:
        resp_comments = {}
    src = f"{api.name}Request.json, {api.name}Response.json"
    types_used = sorted({t for t in _types(api.request + api.response)})
    parts = [HEADER.format(src=src), f'"""Kafka API {api.key}, {api.name}: the request and response tables."""\n',
             "from __future__ import annotations\n\n",
             f"from rafka.net.protocol.schema import {', '.join(['Api', 'Field'] + types_used)}\n\n"]
    if req_top:
        parts.append(f"# {api.name}Request (validVersions {req_json['validVersions']}, "
                     f"flexibleVersions {req_json['flexibleVersions']}):\n")
        parts.append(_comment_lines(req_top))
    if resp_top:
        parts.append(f"# {api.name}Response:\n")
        parts.append(_comment_lines(resp_top))
    if meta["note"]:
        parts.append(f"# NOTE: {meta['note']}.\n")
    parts.append(
        f"{const_name(api.name)} = Api(\n"
        f"    key={api.key},\n"
        f"    name={api.name!r},\n"
        f"    versions={api.versions!r},\n"
        f"    json_versions={api.json_versions!r},\n"
        f"    flexible_from={api.flexible_from!r},\n"
        f"    request=[\n{_fmt_fields(api.request, req_comments)},\n    ],\n"
        f"    response=[\n{_fmt_fields(api.response, resp_comments)},\n    ],\n"
        f")\n")
    return "".join(parts)


def _types(fields: tuple[Field, ...]) -> set[str]:
    out: set[str] = set()
    for f in fields:
        out.add(f.type.upper())
        if f.item:
            out.add(f.item.upper())
        out |= _types(f.fields)
    return out


def render_init(apis: list[Api]) -> str:
    lines = [HEADER.format(src="*Request.json, *Response.json"),
             '"""Registry of the APIs rafka speaks: `APIS` (api key -> Api), `API_BY_NAME`."""\n',
             "from __future__ import annotations\n\n",
             "from rafka.net.protocol.schema import Api\n\n"]
    for api in sorted(apis, key=lambda a: module_name(a.name)):
        lines.append(f"from .{module_name(api.name)} import {const_name(api.name)}\n")
    lines.append("\nAPIS: dict[int, Api] = {\n")
    for api in sorted(apis, key=lambda a: a.key):
        lines.append(f"    {api.key}: {const_name(api.name)},\n")
    lines.append("}\n\nAPI_BY_NAME: dict[str, Api] = {api.name: api for api in APIS.values()}\n\n")
    names = sorted(const_name(a.name) for a in apis)
    lines.append("__all__ = [\"APIS\", \"API_BY_NAME\", " + ", ".join(f'"{n}"' for n in names) + "]\n")
    return "".join(lines)


def render_all() -> dict[str, str]:
    """File name -> source for every generated module."""
    files: dict[str, str] = {}
    apis = []
    for name in SUPPORTED:
        api, meta = build_api(name)
        apis.append(api)
        files[f"{module_name(name)}.py"] = render_api(api, meta)
    files["__init__.py"] = render_init(apis)
    return files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only compare, exit 1 on drift")
    args = ap.parse_args(argv)
    files = render_all()
    drift = []
    for fname, src in files.items():
        path = OUT_DIR / fname
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old != src:
            drift.append(fname)
            if not args.check:
                path.write_text(src, encoding="utf-8")
    if args.check:
        if drift:
            print("out of date:", ", ".join(drift))
            return 1
        return 0
    print(f"wrote {len(drift)} of {len(files)} files to {OUT_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
