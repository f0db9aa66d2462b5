"""The vocabulary of the protocol tables: `Field`, `Api` and the wire types.

The tables in `net/protocol/apis/` are generated from Kafka's JSON message definitions by
`tools/gen_protocol.py` and read by the one codec in `net/protocol/codec.py`, which also reads
and writes the stored records a `DataSchema` describes (`coordinator/group/offsets_records.py`). A table never
repeats per version: each field carries Kafka's own version-range strings ("3+", "0-12",
"none"), and the codec derives the wire layout of one (api, version, direction) from them.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field as dc_field
from functools import lru_cache
from typing import Any

# Wire types, named as in Kafka's JSON definitions.
BOOL = "bool"
INT8 = "int8"
INT16 = "int16"
INT32 = "int32"
INT64 = "int64"
UINT16 = "uint16"
FLOAT64 = "float64"
STRING = "string"
BYTES = "bytes"
RECORDS = "records"  # a record-batch blob: decoded as a zero-copy memoryview of the frame
UUID = "uuid"        # 16 bytes on the wire, `uuid.UUID` in dicts
ARRAY = "array"      # `[]T`: `item` names a primitive T, or `fields` describe a struct T
STRUCT = "struct"    # a single nested struct (Kafka: a field whose type is a struct name)

PRIMITIVES = frozenset({BOOL, INT8, INT16, INT32, INT64, UINT16, FLOAT64, STRING, BYTES,
                        RECORDS, UUID})

MAX_VERSION = 0x7FFF  # upper bound of an open range such as "9+"
ZERO_UUID = uuid.UUID(int=0)


class _Unset:
    """Marker for "no `default` in the JSON": the codec uses the type's natural default."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@lru_cache(maxsize=None)
def parse_versions(spec: str) -> tuple[int, int] | None:
    """Kafka's version-range syntax to an inclusive (lo, hi): "3+", "0-12", "5", or None for "none"."""
    spec = spec.strip()
    if spec == "none" or spec == "":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), MAX_VERSION
    if "-" in spec:
        lo, hi = spec.split("-", 1)
        return int(lo), int(hi)
    return int(spec), int(spec)


def in_versions(spec: str, version: int) -> bool:
    """True when `version` lies in the range `spec` ("none" contains nothing)."""
    r = parse_versions(spec)
    return r is not None and r[0] <= version <= r[1]


@dataclass(frozen=True)
class Field:
    """One field of a message or struct, for all versions at once.

    `name` is the snake_case of Kafka's JSON name (the key in decoded dicts), `type` one of
    the wire types above. `versions`/`nullable`/`tagged` are Kafka range strings; a field with
    a `tag` is written in the tagged-field section in its `tagged` versions (and only when its
    value differs from its default, as Kafka does). `default` is the JSON's declared default
    (UNSET: the type's natural default, see `default_value`). `item` is the element type of an
    array of primitives; `fields` the members of a struct or of an array's struct elements,
    whose Kafka type name is `struct_name`.
    """

    name: str
    type: str
    versions: str = "0+"
    nullable: str = "none"
    tag: int | None = None
    tagged: str = "none"
    default: Any = UNSET
    item: str | None = None
    fields: tuple[Field, ...] = ()
    struct_name: str | None = None
    ignorable: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.fields, tuple):
            object.__setattr__(self, "fields", tuple(self.fields))
        if self.type not in PRIMITIVES and self.type not in (ARRAY, STRUCT):
            raise ValueError(f"field {self.name}: unknown type {self.type!r}")
        if self.type == ARRAY and (self.item is None) == (not self.fields):
            raise ValueError(f"field {self.name}: an array needs exactly one of item/fields")

    def present(self, version: int) -> bool:
        return in_versions(self.versions, version)

    def is_nullable(self, version: int) -> bool:
        return in_versions(self.nullable, version)

    def is_tagged(self, version: int) -> bool:
        return self.tag is not None and in_versions(self.tagged, version)

    def default_value(self) -> Any:
        """The value a missing field takes: the JSON default, else 0/""/False/[]/zero uuid...

        Returns a fresh object for lists and structs, so callers may mutate it.
        """
        if self.default is not UNSET:
            return self.default
        return type_default(self)


def type_default(f: Field) -> Any:
    """The natural default of a field's type (Kafka's generated-code defaults)."""
    t = f.type
    if t in (INT8, INT16, INT32, INT64, UINT16):
        return 0
    if t == FLOAT64:
        return 0.0
    if t == BOOL:
        return False
    if t == STRING:
        return ""
    if t == BYTES:
        return b""
    if t == RECORDS:
        return None
    if t == UUID:
        return ZERO_UUID
    if t == ARRAY:
        return []
    if t == STRUCT:
        return {c.name: c.default_value() for c in f.fields}
    raise ValueError(t)


@dataclass(frozen=True)
class Api:
    """One Kafka API: its key, our supported version range and both message tables.

    `versions` is the inclusive (min, max) range rafka decodes and encodes; `json_versions`
    is Kafka's declared `validVersions` (e.g. Produce: JSON min 3, which the front-end
    advertises as 0 per KAFKA-18659). `flexible_from` is the first flexible version (compact
    types + tagged fields; None when the API has none).
    """

    key: int
    name: str
    versions: tuple[int, int]
    json_versions: tuple[int, int]
    flexible_from: int | None
    request: tuple[Field, ...] = dc_field(default=())
    response: tuple[Field, ...] = dc_field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "versions", tuple(self.versions))
        object.__setattr__(self, "json_versions", tuple(self.json_versions))
        object.__setattr__(self, "request", tuple(self.request))
        object.__setattr__(self, "response", tuple(self.response))

    @property
    def version_list(self) -> list[int]:
        """Every supported version, for iteration and `pytest.mark.parametrize`."""
        return list(range(self.versions[0], self.versions[1] + 1))

    def supports(self, version: int) -> bool:
        return self.versions[0] <= version <= self.versions[1]

    def is_flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from


@dataclass(frozen=True, eq=False)
class DataSchema:
    """A versioned record that is stored rather than sent: Kafka's `"type": "data"` JSON
    (the keys and values of `__consumer_offsets`, say). Its fields are `Field`s like an API's,
    read and written by the same codec (`codec.encode_data`/`decode_data`); Kafka stores
    such a record after an int16 version (`MessageUtil.toVersionPrefixedBytes`).

    `versions` is the inclusive (min, max) range; `flexible_from` the first flexible version
    (None: none). Compared by identity: the codec caches its compiled code per schema object.
    """

    name: str
    versions: tuple[int, int]
    flexible_from: int | None
    fields: tuple[Field, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "versions", tuple(self.versions))
        object.__setattr__(self, "fields", tuple(self.fields))

    def supports(self, version: int) -> bool:
        return self.versions[0] <= version <= self.versions[1]

    def is_flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from
