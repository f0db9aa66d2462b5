"""Example bodies for every (api, version, direction) of our tables, and their decoded form.

`example_body` fills every field present in a version with a non-default value (or None where
the field is nullable, in the "nulls" variant), recursing into arrays and structs, so that
tagged fields are written and nested arrays are exercised. `expected_decoded` is what the
codec must return for it: fields absent from that version take their defaults.
"""
from __future__ import annotations

import uuid
from typing import Any

from rafka.net.protocol.schema import (
    ARRAY, BOOL, BYTES, FLOAT64, INT8, INT16, INT32, INT64, RECORDS, STRING, STRUCT, UINT16,
    UUID, Field,
)

_INT_BASE = {INT8: 7, INT16: 300, INT32: 70_000, INT64: 2**40, UINT16: 40_000}
_INT_SPAN = {INT8: 100, INT16: 30_000, INT32: 2**30, INT64: 2**60, UINT16: 20_000}


def _primitive(f: Field, t: str, k: int) -> Any:
    if t in _INT_BASE:
        v = _INT_BASE[t] + k % _INT_SPAN[t]
        return v if v != f.default_value() else v + 1
    if t == BOOL:
        return not f.default_value()
    if t == FLOAT64:
        return 1.5 + k
    if t == STRING:
        return f"{f.name}-{k}-é"
    if t == BYTES:
        return bytes([k % 256, 0, 255]) + f.name.encode()
    if t == RECORDS:
        return b"R" * (k % 7) + f.name.encode() * 3
    if t == UUID:
        return uuid.UUID(int=(k + 1) * 0x1234567)
    raise ValueError(t)


def example_body(fields: tuple[Field, ...], version: int, nulls: bool, k: int = 1) -> dict:
    body: dict[str, Any] = {}
    for i, f in enumerate(fields):
        if not f.present(version):
            continue
        kk = k * 31 + i
        if nulls and f.is_nullable(version):
            body[f.name] = None
        elif f.type == ARRAY:
            if f.item is not None:
                body[f.name] = [_primitive(f, f.item, kk), _primitive(f, f.item, kk + 1)]
            else:
                body[f.name] = [example_body(f.fields, version, nulls, kk + j) for j in range(2)]
        elif f.type == STRUCT:
            body[f.name] = example_body(f.fields, version, nulls, kk)
        else:
            body[f.name] = _primitive(f, f.type, kk)
    return body


def expected_decoded(fields: tuple[Field, ...], version: int, body: dict) -> dict:
    out: dict[str, Any] = {}
    for f in fields:
        if not f.present(version) or f.name not in body:
            out[f.name] = default_decoded(f)
            continue
        v = body[f.name]
        if v is None:
            out[f.name] = None
        elif f.type == ARRAY and f.item is None:
            out[f.name] = [expected_decoded(f.fields, version, e) for e in v]
        elif f.type == STRUCT:
            out[f.name] = expected_decoded(f.fields, version, v)
        else:
            out[f.name] = v
    return out


def default_decoded(f: Field) -> Any:
    if f.type == STRUCT:
        return {c.name: default_decoded(c) for c in f.fields}
    return f.default_value()


def materialize(v: Any) -> Any:
    """Decoded value with memoryviews turned into bytes, for comparisons."""
    if isinstance(v, memoryview):
        return bytes(v)
    if isinstance(v, dict):
        return {k: materialize(x) for k, x in v.items()}
    if isinstance(v, list):
        return [materialize(x) for x in v]
    return v


def cases(apis) -> list[tuple[str, Any, int, bool]]:
    """(id, api, version, is_request) for every direction of every supported version."""
    out = []
    for api in sorted(apis, key=lambda a: a.key):
        for v in api.version_list:
            for req in (True, False):
                out.append((f"{api.name}-v{v}-{'request' if req else 'response'}", api, v, req))
    return out
