"""The one Kafka wire codec, driven by the tables in `net/protocol/apis/`.

For each (api, version, direction) the tables are compiled once, on first use, into a
straight-line Python reader and writer (source generated here and `exec`-ed, cached in a
dict), so a message is never decoded by re-interpreting the tables. Classic versions use
INT16-length strings and INT32-length bytes/arrays (-1 = null); flexible versions use
"compact" types (unsigned-varint length + 1, 0 = null) and a tagged-field section at the end
of every struct (KIP-482).

Dict shape (decode output and encode input), one version-neutral shape per message:
- keys are the tables' snake_case field names; every field of the table is present after
  decoding, fields absent from the wire version carrying their defaults;
- arrays are lists (of dicts for struct elements), a struct field is a dict;
- `string` -> str, `bytes` -> bytes, `uuid` -> `uuid.UUID`, nullable values -> None;
- `records` -> a zero-copy `memoryview` slice of the frame (None when null);
- tagged fields are ordinary keys; unknown tags are skipped on decode, and on encode a tagged
  field is written only when its value differs from its default (as Kafka does).

The same engine reads and writes stored records described by a `DataSchema` (Kafka's
"data" messages, such as the keys and values of `__consumer_offsets`): `encode_data` and
`decode_data`, whose writer is strict (`EncodeError`) where the request and response writers
are lenient.

Frames here are Kafka frames WITHOUT their 4-byte size prefix unless a function says so.
Malformed input raises `ProtocolError` (never IndexError/struct.error/UnicodeDecodeError);
every length is checked against the bytes remaining before anything is allocated.
Encoding is lenient: unknown keys and fields the version lacks are ignored, None for a field
that is not nullable in that version is written as empty; a value of the wrong type raises
whatever `struct`/`len` raise (a handler bug, not a client error).
"""
from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from rafka.common.errors import InvalidRequestError, UnsupportedVersionError
from rafka.common.varint import read_unsigned_varint, unsigned_varint_bytes
from rafka.net.protocol.apis import API_VERSIONS, APIS
from rafka.net.protocol.schema import (
    ARRAY, BOOL, BYTES, FLOAT64, INT8, INT16, INT32, INT64, RECORDS, STRING, STRUCT, UINT16,
    UUID, Api, DataSchema, Field, ZERO_UUID,
)

__all__ = [
    "ProtocolError", "RequestHeader", "decode_request_header", "decode_request",
    "encode_response", "frame_response", "encode_request", "decode_response",
    "read_frame_size", "is_supported", "EncodeError", "encode_data", "decode_data",
]

API_VERSIONS_KEY = API_VERSIONS.key


class ProtocolError(InvalidRequestError):
    """A frame that does not parse: truncated, bad length, bad varint, bad UTF-8."""


class EncodeError(ValueError):
    """A value a strict writer (`encode_data`) refuses: null in a field that is not nullable
    in that version, or a string longer than an int16 length allows."""


_FIXED = {BOOL: "?", INT8: "b", INT16: "h", INT32: "i", INT64: "q", UINT16: "H", FLOAT64: "d"}
_DECODE_ERRORS = (struct.error, IndexError, ValueError, OverflowError, TypeError)
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_HDR = struct.Struct(">hhi")


# ---------------------------------------------------------------- helpers

def _skip_tagged(buf: Any, pos: int, end: int) -> int:
    """Skip a tagged-field section; returns the position after it."""
    n, pos = read_unsigned_varint(buf, pos)
    for _ in range(n):
        _tag, pos = read_unsigned_varint(buf, pos)
        size, pos = read_unsigned_varint(buf, pos)
        pos += size
        if pos > end:
            raise ProtocolError("tagged field past the end of the frame")
    return pos


def _uuid_bytes(v: Any) -> bytes:
    if v is None:
        return ZERO_UUID.bytes
    if isinstance(v, uuid.UUID):
        return v.bytes
    b = bytes(v)
    if len(b) != 16:
        raise ValueError("a uuid is 16 bytes")
    return b


# ---------------------------------------------------------------- code generation

class _Gen:
    """Accumulates the source of one compiled reader or writer."""

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict  # writers: refuse what the table does not allow (EncodeError)
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {
            "_PE": ProtocolError, "_EE": EncodeError, "_ruv": read_unsigned_varint, "_uvb": unsigned_varint_bytes,
            "_UUID": uuid.UUID, "_uuidb": _uuid_bytes, "_skip_tagged": _skip_tagged,
            "_i16u": _I16.unpack_from, "_i32u": _I32.unpack_from,
            "_i16p": _I16.pack, "_i32p": _I32.pack, "_unpack_from": struct.unpack_from,
            "_pack": struct.pack, "_BL": (bytes, bytearray, memoryview), "_ZU": ZERO_UUID,
        }
        self._n = 0
        self._consts: dict[Any, str] = {}

    def tmp(self, prefix: str = "t") -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def const(self, obj: Any) -> str:
        key = (type(obj), obj) if not isinstance(obj, (dict, list)) else id(obj)
        name = self._consts.get(key)
        if name is None:
            name = self.tmp("_c")
            self._consts[key] = name
            self.ns[name] = obj
        return name

    def emit(self, ind: int, line: str) -> None:
        self.lines.append("    " * ind + line)

    def compile(self, fname: str) -> Callable:
        src = "\n".join(self.lines)
        exec(compile(src, f"<rafka codec {fname}>", "exec"), self.ns)  # noqa: S102
        fn = self.ns[fname]
        fn.__source__ = src
        return fn


def _default_expr(g: _Gen, f: Field) -> str:
    """An expression that evaluates to a fresh default value of `f`."""
    if f.type == ARRAY:
        d = f.default_value()
        return "None" if d is None else "[]"
    if f.type == STRUCT:
        return "{" + ", ".join(f"{c.name!r}: {_default_expr(g, c)}" for c in f.fields) + "}"
    d = f.default_value()
    if d is None or isinstance(d, (bool, int, float)):
        return repr(d)
    return g.const(d)


# ---- reader

def _emit_len(g: _Gen, ind: int, var: str, flexible: bool, wide: bool) -> None:
    """Read a length: compact (uvarint - 1) or classic INT16 (strings) / INT32 (others)."""
    if flexible:
        g.emit(ind, f"{var} = buf[pos]")
        g.emit(ind, f"if {var} < 128: pos += 1")
        g.emit(ind, f"else: {var}, pos = _ruv(buf, pos)")
        g.emit(ind, f"{var} -= 1")
    elif wide:
        g.emit(ind, f"{var}, = _i32u(buf, pos)")
        g.emit(ind, "pos += 4")
    else:
        g.emit(ind, f"{var}, = _i16u(buf, pos)")
        g.emit(ind, "pos += 2")


def _emit_null_check(g: _Gen, ind: int, n: str, target: str, nullable: bool, what: str) -> None:
    g.emit(ind, f"if {n} < 0:")
    if nullable:
        g.emit(ind + 1, f"if {n} != -1: raise _PE('negative {what} length')")
        g.emit(ind + 1, f"{target} = None")
    else:
        g.emit(ind + 1, f"raise _PE('null or negative length for a {what} that is not nullable')")


def _emit_read_value(g: _Gen, ind: int, f: Field, t: str, version: int, flexible: bool,
                     target: str) -> None:
    """Read one value of wire type `t` (f's type, or its array item type) into `target`."""
    nullable = f.is_nullable(version)
    if t in _FIXED:
        fmt = ">" + _FIXED[t]
        g.emit(ind, f"{target}, = {g.const(struct.Struct(fmt).unpack_from)}(buf, pos)")
        g.emit(ind, f"pos += {struct.calcsize(fmt)}")
    elif t == UUID:
        g.emit(ind, "if pos + 16 > end: raise _PE('truncated uuid')")
        g.emit(ind, f"{target} = _UUID(bytes=bytes(buf[pos:pos + 16]))")
        g.emit(ind, "pos += 16")
    elif t in (STRING, BYTES, RECORDS):
        n = g.tmp("n")
        _emit_len(g, ind, n, flexible, wide=t != STRING)
        _emit_null_check(g, ind, n, target, nullable, t)
        g.emit(ind, "else:")
        e = g.tmp("e")
        g.emit(ind + 1, f"{e} = pos + {n}")
        g.emit(ind + 1, f"if {e} > end: raise _PE('{t} past the end of the frame')")
        if t == STRING:
            g.emit(ind + 1, f"{target} = str(buf[pos:{e}], 'utf-8')")
        elif t == BYTES:
            g.emit(ind + 1, f"{target} = bytes(buf[pos:{e}])")
        else:
            g.emit(ind + 1, f"{target} = buf[pos:{e}]")
        g.emit(ind + 1, f"pos = {e}")
    elif t == ARRAY:
        n = g.tmp("n")
        _emit_len(g, ind, n, flexible, wide=True)
        _emit_null_check(g, ind, n, target, nullable, "array")
        g.emit(ind, f"elif {n} > end - pos: raise _PE('array length past the end of the frame: %d elements in "
                    f"%d bytes' % ({n}, end - pos))")
        g.emit(ind, "else:")
        if f.item is not None and f.item in _FIXED:
            size = struct.calcsize(">" + _FIXED[f.item])
            g.emit(ind + 1, f"{target} = list(_unpack_from('>%d{_FIXED[f.item]}' % {n}, buf, pos))")
            g.emit(ind + 1, f"pos += {size} * {n}")
        else:
            lst = g.tmp("l")
            g.emit(ind + 1, f"{lst} = []")
            g.emit(ind + 1, f"for _ in range({n}):")
            item = g.tmp("x")
            if f.item is not None:
                _emit_read_value(g, ind + 2, f, f.item, version, flexible, item)
            else:
                _emit_read_struct(g, ind + 2, f.fields, version, flexible, item)
            g.emit(ind + 2, f"{lst}.append({item})")
            g.emit(ind + 1, f"{target} = {lst}")
    elif t == STRUCT:
        _emit_read_struct(g, ind, f.fields, version, flexible, target)
    else:  # pragma: no cover - Field validates types
        raise ValueError(t)


def _emit_read_struct(g: _Gen, ind: int, fields: tuple[Field, ...], version: int,
                      flexible: bool, target: str) -> None:
    """Read the fields of one struct (or message body) into a new dict in `target`."""
    exprs: dict[str, str] = {}
    tagged: list[tuple[Field, str]] = []
    run: list[tuple[Field, str]] = []

    def flush() -> None:
        if not run:
            return
        fmt = ">" + "".join(_FIXED[f.type] for f, _ in run)
        names = ", ".join(v for _, v in run)
        g.emit(ind, f"{names}, = {g.const(struct.Struct(fmt).unpack_from)}(buf, pos)")
        g.emit(ind, f"pos += {struct.calcsize(fmt)}")
        run.clear()

    for f in fields:
        if not f.present(version):
            exprs[f.name] = _default_expr(g, f)
            continue
        var = g.tmp("v")
        exprs[f.name] = var
        if flexible and f.is_tagged(version):
            tagged.append((f, var))
            continue
        if f.type in _FIXED:
            run.append((f, var))
            continue
        flush()
        _emit_read_value(g, ind, f, f.type, version, flexible, var)
    flush()
    if flexible:
        if not tagged:
            g.emit(ind, "if buf[pos] == 0: pos += 1")
            g.emit(ind, "else: pos = _skip_tagged(buf, pos, end)")
        else:
            for f, var in tagged:
                g.emit(ind, f"{var} = {_default_expr(g, f)}")
            nt, tg, sz, e = g.tmp("nt"), g.tmp("tg"), g.tmp("sz"), g.tmp("e")
            g.emit(ind, f"{nt}, pos = _ruv(buf, pos)")
            g.emit(ind, f"for _ in range({nt}):")
            g.emit(ind + 1, f"{tg}, pos = _ruv(buf, pos)")
            g.emit(ind + 1, f"{sz}, pos = _ruv(buf, pos)")
            g.emit(ind + 1, f"{e} = pos + {sz}")
            g.emit(ind + 1, f"if {e} > end: raise _PE('tagged field past the end of the frame')")
            kw = "if"
            for f, var in tagged:
                g.emit(ind + 1, f"{kw} {tg} == {f.tag}:")
                _emit_read_value(g, ind + 2, f, f.type, version, flexible, var)
                kw = "elif"
            g.emit(ind + 1, f"pos = {e}")
    g.emit(ind, f"{target} = {{" + ", ".join(f"{k!r}: {v}" for k, v in exprs.items()) + "}")


def _compile_reader(fields: tuple[Field, ...], version: int, flexible: bool, label: str) -> Callable:
    g = _Gen()
    g.emit(0, "def read(buf, pos):")
    g.emit(1, "end = len(buf)")
    _emit_read_struct(g, 1, fields, version, flexible, "d")
    g.emit(1, "return d, pos")
    return g.compile("read")


# ---- writer

def _emit_len_w(g: _Gen, ind: int, expr: str, flexible: bool, wide: bool) -> None:
    if flexible:
        n = g.tmp("n")
        g.emit(ind, f"{n} = {expr} + 1")
        g.emit(ind, f"if {n} < 128: out.append({n})")
        g.emit(ind, f"else: out += _uvb({n})")
    elif wide:
        g.emit(ind, f"out += _i32p({expr})")
    else:
        g.emit(ind, f"out += _i16p({expr})")


def _null_bytes(flexible: bool, wide: bool, nullable: bool) -> bytes:
    if nullable:
        return b"\x00" if flexible else (b"\xff\xff\xff\xff" if wide else b"\xff\xff")
    return b"\x01" if flexible else (b"\x00\x00\x00\x00" if wide else b"\x00\x00")  # empty


def _emit_write_value(g: _Gen, ind: int, f: Field, t: str, version: int, flexible: bool,
                      v: str, in_tag: bool) -> None:
    """Write the value in variable `v` with wire type `t` (f's type or its array item type)."""
    nullable = f.is_nullable(version)
    if g.strict and not nullable and t in (STRING, BYTES, ARRAY):
        g.emit(ind, f"if {v} is None: raise _EE('{f.name} is not nullable in version {version}')")
    if t in _FIXED:
        g.emit(ind, f"out += {g.const(struct.Struct('>' + _FIXED[t]).pack)}({v})")
    elif t == UUID:
        g.emit(ind, f"out += {v}.bytes if {v}.__class__ is _UUID else _uuidb({v})")
    elif t == STRING:
        g.emit(ind, f"if {v} is None: out += {_null_bytes(flexible, False, nullable)!r}")
        g.emit(ind, "else:")
        b = g.tmp("b")
        g.emit(ind + 1, f"{b} = {v}.encode('utf-8') if {v}.__class__ is str else bytes({v})")
        if g.strict:
            g.emit(ind + 1, f"if len({b}) > 0x7FFF: raise _EE('{f.name} is longer than 32767 bytes')")
        _emit_len_w(g, ind + 1, f"len({b})", flexible, wide=False)
        g.emit(ind + 1, f"out += {b}")
    elif t == BYTES:
        g.emit(ind, f"if {v} is None: out += {_null_bytes(flexible, True, nullable)!r}")
        g.emit(ind, "else:")
        _emit_len_w(g, ind + 1, f"len({v})", flexible, wide=True)
        g.emit(ind + 1, f"out += {v}")
    elif t == RECORDS:
        if in_tag:
            raise ValueError("records inside a tagged field are not supported")
        g.emit(ind, f"if {v} is None: out += {_null_bytes(flexible, True, nullable)!r}")
        g.emit(ind, f"elif {v}.__class__ in _BL:")
        _emit_len_w(g, ind + 1, f"len({v})", flexible, wide=True)
        g.emit(ind + 1, f"out += {v}")
        g.emit(ind, "else:")
        # A file region or similar: its own part, sent as is (os.sendfile) by the front-end.
        _emit_len_w(g, ind + 1, f"len({v})", flexible, wide=True)
        g.emit(ind + 1, "parts.append(out)")
        g.emit(ind + 1, f"parts.append({v})")
        g.emit(ind + 1, "out = bytearray()")
    elif t == ARRAY:
        g.emit(ind, f"if {v} is None: out += {_null_bytes(flexible, True, nullable)!r}")
        g.emit(ind, "else:")
        _emit_len_w(g, ind + 1, f"len({v})", flexible, wide=True)
        x = g.tmp("x")
        if f.item is not None and f.item in _FIXED:
            g.emit(ind + 1, f"out += _pack('>%d{_FIXED[f.item]}' % len({v}), *{v})")
        elif f.item is not None:
            g.emit(ind + 1, f"for {x} in {v}:")
            _emit_write_value(g, ind + 2, f, f.item, version, flexible, x, in_tag)
        else:
            g.emit(ind + 1, f"for {x} in {v}:")
            _emit_write_struct(g, ind + 2, f.fields, version, flexible, x, in_tag)
    elif t == STRUCT:
        _emit_write_struct(g, ind, f.fields, version, flexible, v, in_tag)
    else:  # pragma: no cover
        raise ValueError(t)


def _default_ref(g: _Gen, f: Field) -> str:
    """Expression for f's default when writing (a shared, read-only object)."""
    if f.type == ARRAY:
        return "None" if f.default_value() is None else "()"
    if f.type == STRUCT:
        return g.const(f.default_value())
    dv = f.default_value()
    return repr(dv) if dv is None or isinstance(dv, (bool, int, float)) else g.const(dv)


def _emit_get(g: _Gen, f: Field, d: str, dflt: str | None = None) -> str:
    """Expression fetching field `f` from dict `d`, or its default."""
    return f"{d}.get({f.name!r}, {dflt or _default_ref(g, f)})"


def _emit_write_struct(g: _Gen, ind: int, fields: tuple[Field, ...], version: int,
                       flexible: bool, d: str, in_tag: bool) -> None:
    run: list[Field] = []
    tagged: list[Field] = []

    def flush() -> None:
        if not run:
            return
        fmt = ">" + "".join(_FIXED[f.type] for f in run)
        args = ", ".join(_emit_get(g, f, d) for f in run)
        g.emit(ind, f"out += {g.const(struct.Struct(fmt).pack)}({args})")
        run.clear()

    for f in fields:
        if not f.present(version):
            continue
        if flexible and f.is_tagged(version):
            tagged.append(f)
            continue
        if f.type in _FIXED:
            run.append(f)
            continue
        flush()
        v = g.tmp("v")
        g.emit(ind, f"{v} = {_emit_get(g, f, d)}")
        _emit_write_value(g, ind, f, f.type, version, flexible, v, in_tag)
    flush()
    if not flexible:
        return
    if not tagged:
        g.emit(ind, "out.append(0)")
        return
    tl, saved = g.tmp("tl"), g.tmp("sv")
    g.emit(ind, f"{tl} = []")
    for f in sorted(tagged, key=lambda f: f.tag):
        v = g.tmp("v")
        ref = _default_ref(g, f)
        g.emit(ind, f"{v} = {_emit_get(g, f, d, ref)}")
        dflt = f.default_value()
        if f.type == ARRAY:
            cond = f"{v}" if dflt is not None else f"{v} is not None"
        elif dflt is None:
            cond = f"{v} is not None"
        elif isinstance(dflt, (bool, int)):
            cond = f"{v} != {dflt!r}"
        else:  # the shared default object itself is the common case: test identity first
            cond = f"{v} is not {ref} and {v} != {ref}"
        g.emit(ind, f"if {cond}:")
        g.emit(ind + 1, f"{saved} = out")
        g.emit(ind + 1, "out = bytearray()")
        _emit_write_value(g, ind + 1, f, f.type, version, flexible, v, True)
        g.emit(ind + 1, f"{tl}.append(({f.tag}, out))")
        g.emit(ind + 1, f"out = {saved}")
    tg, tb = g.tmp("tg"), g.tmp("tb")
    g.emit(ind, f"if not {tl}: out.append(0)")
    g.emit(ind, "else:")
    g.emit(ind + 1, f"out += _uvb(len({tl}))")
    g.emit(ind + 1, f"for {tg}, {tb} in {tl}:")
    g.emit(ind + 2, f"out += _uvb({tg})")
    g.emit(ind + 2, f"out += _uvb(len({tb}))")
    g.emit(ind + 2, f"out += {tb}")


def _compile_writer(fields: tuple[Field, ...], version: int, flexible: bool, label: str,
                    strict: bool = False) -> Callable:
    g = _Gen(strict)
    g.emit(0, "def write(d, out, parts):")
    _emit_write_struct(g, 1, fields, version, flexible, "d", False)
    g.emit(1, "return out")
    return g.compile("write")


# ---------------------------------------------------------------- compiled cache

# (api key or DataSchema, version, request?, write?) -> compiled function
_CODE: dict[tuple[int | DataSchema, int, bool, bool], Callable] = {}


def _api(api_key: int, api_version: int) -> Api:
    api = APIS.get(api_key)
    if api is None:
        raise UnsupportedVersionError(f"unknown api key {api_key}")
    if not api.supports(api_version):
        raise UnsupportedVersionError(
            f"{api.name} v{api_version} not in {api.versions[0]}-{api.versions[1]}")
    return api


def _compiled(owner: int | DataSchema, version: int, request: bool, write: bool) -> Callable:
    """The reader or writer of an API message (`owner` its key) or of a stored record
    (`owner` its DataSchema; writers strict), compiled on first use."""
    k = (owner, version, request, write)
    fn = _CODE.get(k)
    if fn is None:
        if isinstance(owner, DataSchema):
            if not owner.supports(version):
                raise ValueError(f"{owner.name} has no version {version}")
            fields, flexible, label = owner.fields, owner.is_flexible(version), f"{owner.name}-v{version}"
        else:
            api = _api(owner, version)
            fields, flexible = (api.request if request else api.response), api.is_flexible(version)
            label = f"{api.name}-v{version}-{'request' if request else 'response'}"
        fn = (_compile_writer(fields, version, flexible, label, strict=isinstance(owner, DataSchema)) if write
              else _compile_reader(fields, version, flexible, label))
        _CODE[k] = fn
    return fn


def precompile() -> int:
    """Compile every reader and writer now (e.g. at server start); returns how many."""
    n = 0
    for api in APIS.values():
        for v in api.version_list:
            for req in (True, False):
                _compiled(api.key, v, req, False)
                _compiled(api.key, v, req, True)
                n += 2
    return n


# ---------------------------------------------------------------- public API

@dataclass(frozen=True, slots=True)
class RequestHeader:
    """Kafka request header v1/v2 (v2 = v1 + a tagged-field section, for flexible versions).

    `supported` tells whether (api_key, api_version) is in our tables; when it is not, only
    the four fixed fields were read and the body offset is after client_id.
    """

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None

    @property
    def supported(self) -> bool:
        return is_supported(self.api_key, self.api_version)


# (api key, version) -> flexible?, for every version in our tables.
_FLEXIBLE: dict[tuple[int, int], bool] = {
    (api.key, v): api.is_flexible(v) for api in APIS.values() for v in api.version_list}


def is_supported(api_key: int, api_version: int) -> bool:
    """True when our tables decode this api key at this version."""
    return (api_key, api_version) in _FLEXIBLE


def decode_request_header(frame: memoryview | bytes) -> tuple[RequestHeader, int]:
    """Read the request header; returns it and the offset where the body starts.

    client_id is a classic nullable INT16-length string even in header v2 (so a broker can
    read any ApiVersions request). The tagged-field section is read only when the version is
    known and flexible; for unknown versions the caller answers UNSUPPORTED_VERSION or closes.
    Raises ProtocolError when the frame is too short for the header.
    """
    try:
        api_key, api_version, correlation_id = _HDR.unpack_from(frame, 0)
        n, = _I16.unpack_from(frame, 8)
        pos = 10
        if n == -1:
            client_id = None
        elif n < 0:
            raise ProtocolError("negative client_id length")
        else:
            end = pos + n
            if end > len(frame):
                raise ProtocolError("client_id past the end of the frame")
            client_id = str(frame[pos:end], "utf-8")
            pos = end
        if _FLEXIBLE.get((api_key, api_version)):
            if frame[pos] == 0:
                pos += 1
            else:
                pos = _skip_tagged(frame, pos, len(frame))
    except ProtocolError:
        raise
    except _DECODE_ERRORS as e:
        raise ProtocolError(f"malformed request header: {e}") from None
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def decode_request(frame: memoryview | bytes) -> tuple[RequestHeader, dict]:
    """Decode a request frame (without its size prefix) into (header, body dict).

    `records` values are zero-copy slices of `frame` (pass a memoryview over the receive
    buffer and keep it alive). Trailing bytes after the body are ignored.
    Raises UnsupportedVersionError for an api key/version outside our tables, ProtocolError
    for malformed bytes.
    """
    if not isinstance(frame, memoryview):
        frame = memoryview(frame)
    header, pos = decode_request_header(frame)
    return header, decode_request_body(frame, header, pos)


def decode_request_body(frame: memoryview, header: RequestHeader, pos: int) -> dict:
    """The body of a request frame whose header `decode_request_header` read (ending at `pos`):
    `decode_request` for a caller that looked at the header first."""
    read = _compiled(header.api_key, header.api_version, True, False)
    body, _ = _read(read, frame, pos, header.api_key, header.api_version, "request")
    return body


def _read(read: Callable, buf: memoryview, pos: int, owner: int | str, version: int,
          what: str) -> tuple[dict, int]:
    """`read(buf, pos)`, any decoding failure raised as ProtocolError naming what was read."""
    try:
        return read(buf, pos)
    except ProtocolError:
        raise
    except _DECODE_ERRORS as e:
        raise ProtocolError(f"malformed {owner} v{version} {what}: {e}") from None


def _response_header_tagged(api_key: int, api_version: int) -> bool:
    # Response header v1 (with tagged fields) for flexible versions, except ApiVersions,
    # whose response header is always v0 so any client can read it (KIP-511).
    return api_key != API_VERSIONS_KEY and APIS[api_key].is_flexible(api_version)


def encode_response(api_key: int, api_version: int, correlation_id: int, body: dict) -> list:
    """Encode a response (header + body) as a list of parts, WITHOUT the int32 size prefix.

    Parts are bytes/bytearray chunks, plus each `records` value that is not bytes-like
    (e.g. a file region with `__len__`) as its own part, its length prefix already written
    from `len(obj)`; the front-end sends such parts with os.sendfile. Missing body fields
    take the table's defaults. Raises UnsupportedVersionError outside our tables.
    """
    write = _compiled(api_key, api_version, False, True)
    out = bytearray(_I32.pack(correlation_id))
    if _response_header_tagged(api_key, api_version):
        out.append(0)
    parts: list = []
    out = write(body, out, parts)
    parts.append(out)
    return parts


def frame_response(api_key: int, api_version: int, correlation_id: int, body: dict) -> bytes:
    """`encode_response` joined into one size-prefixed frame (records must be bytes-like)."""
    parts = encode_response(api_key, api_version, correlation_id, body)
    payload = b"".join(p if isinstance(p, (bytes, bytearray, memoryview)) else bytes(p)
                       for p in parts)
    return _I32.pack(len(payload)) + payload


def encode_request(api_key: int, api_version: int, correlation_id: int,
                   client_id: str | None, body: dict) -> bytes:
    """Encode a size-prefixed request frame (header v1, or v2 for flexible versions)."""
    api = _api(api_key, api_version)
    write = _compiled(api_key, api_version, True, True)
    out = bytearray(b"\x00\x00\x00\x00")
    out += _HDR.pack(api_key, api_version, correlation_id)
    if client_id is None:
        out += b"\xff\xff"
    else:
        b = client_id.encode("utf-8")
        out += _I16.pack(len(b))
        out += b
    if api.is_flexible(api_version):
        out.append(0)
    parts: list = []
    out = write(body, out, parts)
    if parts:  # non-bytes records objects: materialise them
        parts.append(out)
        out = bytearray().join(p if isinstance(p, (bytes, bytearray, memoryview)) else bytes(p)
                               for p in parts)
    struct.pack_into(">i", out, 0, len(out) - 4)
    return bytes(out)


def decode_response(api_key: int, api_version: int, frame: memoryview | bytes) -> tuple[int, dict]:
    """Decode a response frame (without its size prefix) -> (correlation_id, body dict)."""
    if not isinstance(frame, memoryview):
        frame = memoryview(frame)
    read = _compiled(api_key, api_version, False, False)
    try:
        correlation_id, = _I32.unpack_from(frame, 0)
        pos = 4
        if _response_header_tagged(api_key, api_version):
            pos = _skip_tagged(frame, pos, len(frame))
        body, _ = read(frame, pos)
    except ProtocolError:
        raise
    except _DECODE_ERRORS as e:
        raise ProtocolError(f"malformed {api_key} v{api_version} response: {e}") from None
    return correlation_id, body


def read_frame_size(buf: bytes | bytearray | memoryview, offset: int = 0) -> int | None:
    """The int32 size prefix at `offset`, or None if fewer than 4 bytes are there.

    A negative size raises ProtocolError; the maximum size is the server's business.
    """
    if len(buf) - offset < 4:
        return None
    n, = _I32.unpack_from(buf, offset)
    if n < 0:
        raise ProtocolError("negative frame size")
    return n


# ---------------------------------------------------------------- stored records

def encode_data(schema: DataSchema, version: int, values: dict, out: bytearray) -> bytearray:
    """Append the body of a `DataSchema` record (no version prefix) to `out`; returns `out`.

    Strict, unlike the request and response writers: None in a field that is not nullable
    in `version`, or a string over 32767 bytes, raises EncodeError, since a stored record is
    read back by every broker's loader. ValueError for a version outside the schema's.
    """
    return _compiled(schema, version, False, True)(values, out, None)


def decode_data(schema: DataSchema, version: int, buf: bytes | bytearray | memoryview,
                pos: int = 0) -> tuple[dict, int]:
    """Read the body of a `DataSchema` record of `version` at `pos` -> (values, next position).

    Bytes after the last field are left to the caller (Kafka's readers ignore them).
    ProtocolError for anything malformed; ValueError for a version outside the schema's.
    """
    read = _compiled(schema, version, False, False)
    if not isinstance(buf, memoryview):
        buf = memoryview(buf)
    return _read(read, buf, pos, schema.name, version, "record")
