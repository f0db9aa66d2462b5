"""Mutated Kafka frames for the fuzzers: the live-broker fuzz test and `tools/fuzz_codec.py`.

Seeds are real frames: the golden exchanges recorded from real clients (tests/data/golden/)
and, so that every API and version is covered, one example request and response per version
of our tables (`tests/unit/protocol/_protocol_examples.py`). `FrameMutator` turns a seed into
a frame that is *almost* right, where decoders break: bit flips, truncations, planted huge
lengths and varints, random api keys and versions, spliced frames, random tails, pure noise.
Frames here carry no size prefix; `framed` adds one, right or wrong.
"""
from __future__ import annotations

import random
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

from rafka.net.protocol import codec
from rafka.net.protocol.apis import APIS
from rafka.net.protocol.frame_log import Exchange, read_exchanges
from rafka.net.protocol.schema import ARRAY, BOOL, BYTES, INT8, INT16, INT32, INT64, RECORDS, STRING, STRUCT, UINT16

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_DIR = ROOT / "tests" / "data" / "golden"
_EXAMPLES_DIR = ROOT / "tests" / "unit" / "protocol"

# Values that break length checks: int32/int16 extremes, -2, and varints of every width.
_LENGTHS = (b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe", b"\xff\xff\xff\xff", b"\x80\x00\x00\x00",
            b"\x7f\xff", b"\xff\xfe", b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x80\x01",
            b"\xfe\xff\xff\xff\x07", b"\x00\x10\x00\x00", b"\xff")
_SIZE = struct.Struct(">i")


@dataclass(frozen=True)
class Seed:
    """A valid frame to mutate: a request, or a response of (api_key, api_version)."""

    api_key: int
    api_version: int
    frame: bytes
    request: bool


def golden_exchanges(golden_dir: Path = GOLDEN_DIR) -> dict[str, list[Exchange]]:
    """Every recorded exchange, by client (the folder names under tests/data/golden/)."""
    return {d.name: list(read_exchanges(d / "frames.bin"))
            for d in sorted(golden_dir.iterdir()) if (d / "frames.bin").is_file()}


def golden_seeds(golden_dir: Path = GOLDEN_DIR) -> list[Seed]:
    seeds = []
    for exchanges in golden_exchanges(golden_dir).values():
        for e in exchanges:
            seeds.append(Seed(e.api_key, e.api_version, e.request, True))
            if e.response is not None:
                seeds.append(Seed(e.api_key, e.api_version, e.response, False))
    return seeds


def table_seeds(rng: random.Random) -> list[Seed]:
    """One example request and response of every version of every API in our tables."""
    if str(_EXAMPLES_DIR) not in sys.path:
        sys.path.insert(0, str(_EXAMPLES_DIR))
    from _protocol_examples import example_body

    seeds = []
    for api in APIS.values():
        for v in api.version_list:
            nulls = rng.random() < 0.3
            request = codec.encode_request(api.key, v, rng.randrange(1 << 31), "fuzz",
                                           example_body(api.request, v, nulls))[4:]
            response = codec.frame_response(api.key, v, rng.randrange(1 << 31),
                                            example_body(api.response, v, nulls))[4:]
            seeds += [Seed(api.key, v, request, True), Seed(api.key, v, response, False)]
    return seeds


class FrameMutator:
    """Seeded, so a failure is reproduced by its seed and frame number."""

    KINDS = ("bit_flips", "byte_values", "truncate", "api_key", "api_version", "plant_length",
             "insert", "delete", "random_tail", "splice", "duplicate_chunk", "noise")

    def __init__(self, rng: random.Random, seeds: list[Seed], api_keys: tuple[int, ...] | None = None) -> None:
        self.rng = rng
        self.seeds = seeds
        # The keys a mutated request header may take (the live fuzzer leaves out topic creation).
        self.api_keys = api_keys if api_keys is not None else tuple(range(-2, 80))

    def mutate(self, seed: Seed) -> tuple[str, bytes]:
        """(kind of mutation, mutated frame)."""
        kind = self.rng.choice(self.KINDS)
        return kind, getattr(self, "_" + kind)(bytearray(seed.frame), seed)

    def _pos(self, b: bytearray, start: int = 0) -> int:
        return self.rng.randrange(min(start, len(b)), max(len(b), start + 1))

    def _bit_flips(self, b: bytearray, seed: Seed) -> bytes:
        for _ in range(self.rng.randrange(1, 9)):
            if b:
                i = self.rng.randrange(len(b))
                b[i] ^= 1 << self.rng.randrange(8)
        return bytes(b)

    def _byte_values(self, b: bytearray, seed: Seed) -> bytes:
        for _ in range(self.rng.randrange(1, 5)):
            if b:
                b[self.rng.randrange(len(b))] = self.rng.choice((0, 1, 0x7F, 0x80, 0xFF, self.rng.randrange(256)))
        return bytes(b)

    def _truncate(self, b: bytearray, seed: Seed) -> bytes:
        return bytes(b[:self.rng.randrange(len(b) + 1)])

    def _api_key(self, b: bytearray, seed: Seed) -> bytes:
        if seed.request and len(b) >= 2:
            b[0:2] = struct.pack(">h", self.rng.choice(self.api_keys))
            return bytes(b)
        return self._bit_flips(b, seed)

    def _api_version(self, b: bytearray, seed: Seed) -> bytes:
        if seed.request and len(b) >= 4:
            b[2:4] = struct.pack(">h", self.rng.choice((self.rng.randrange(-2, 20), -32768, 32767,
                                                        seed.api_version + 1, seed.api_version - 1)))
            return bytes(b)
        return self._bit_flips(b, seed)

    def _plant_length(self, b: bytearray, seed: Seed) -> bytes:
        value = self.rng.choice(_LENGTHS)
        i = self._pos(b, 4)
        b[i:i + len(value)] = value
        return bytes(b)

    def _insert(self, b: bytearray, seed: Seed) -> bytes:
        i = self._pos(b)
        b[i:i] = self.rng.randbytes(self.rng.randrange(1, 9))
        return bytes(b)

    def _delete(self, b: bytearray, seed: Seed) -> bytes:
        i = self._pos(b)
        del b[i:i + self.rng.randrange(1, 9)]
        return bytes(b)

    def _random_tail(self, b: bytearray, seed: Seed) -> bytes:
        i = self._pos(b)
        b[i:] = self.rng.randbytes(self.rng.randrange(64))
        return bytes(b)

    def _splice(self, b: bytearray, seed: Seed) -> bytes:
        other = self.rng.choice(self.seeds).frame
        return bytes(b[:self._pos(b)]) + other[self.rng.randrange(len(other) + 1):]

    def _duplicate_chunk(self, b: bytearray, seed: Seed) -> bytes:
        i = self._pos(b)
        chunk = b[i:i + self.rng.randrange(1, 33)]
        b[i:i] = chunk * self.rng.randrange(1, 4)
        return bytes(b)

    def _noise(self, b: bytearray, seed: Seed) -> bytes:
        head = bytes(b[:self.rng.choice((0, 4, 8, 10))])  # sometimes keep a plausible header
        return head + self.rng.randbytes(self.rng.randrange(200))

    @staticmethod
    def framed_exactly(frame: bytes) -> bytes:
        return _SIZE.pack(len(frame)) + frame

    def framed(self, frame: bytes) -> bytes:
        """`frame` with a size prefix: mostly right; sometimes too small, too large, negative,
        zero or absurd (then the connection's next frames are misread, as they would be)."""
        r = self.rng.random()
        if r < 0.85:
            return self.framed_exactly(frame)
        if r < 0.90:
            size = max(0, len(frame) - self.rng.randrange(1, 16))
        elif r < 0.94:
            size = len(frame) + self.rng.randrange(1, 16)
        else:
            size = self.rng.choice((0, -1, -(1 << 31), (1 << 31) - 1, 104857601, 104857600, 1 << 27))
        return _SIZE.pack(size) + frame


_INT_BOUNDS = {INT8: 8, INT16: 16, INT32: 32, INT64: 64}


class ValueMutator:
    """Frames that still decode, with hostile values: a request's fields replaced, by its table,
    with extremes of their type (negative and huge counts, ids, timeouts; empty, long and odd
    strings; null where allowed; emptied or repeated arrays). Such frames reach the handlers,
    which a byte-level mutation rarely does, and keep the connection open."""

    def __init__(self, rng: random.Random, rate: float = 0.15) -> None:
        self.rng = rng
        self.rate = rate

    def mutate(self, seed: Seed) -> bytes:
        header, body = codec.decode_request(seed.frame)
        api = APIS[header.api_key]
        self._struct(api.request, body, header.api_version)
        return codec.encode_request(header.api_key, header.api_version, header.correlation_id, header.client_id,
                                    body)[4:]

    def _struct(self, fields: tuple, values: dict, version: int) -> None:
        for f in fields:
            if not f.present(version) or f.name not in values:
                continue
            v = values[f.name]
            if f.type == ARRAY and isinstance(v, list) and f.fields:
                for item in v:
                    self._struct(f.fields, item, version)
            elif f.type == STRUCT and isinstance(v, dict):
                self._struct(f.fields, v, version)
            if self.rng.random() < self.rate:
                values[f.name] = self._value(f, v, version)

    def _value(self, f, v, version: int):  # noqa: ANN001, ANN202 - any field of a table
        rng = self.rng
        if f.is_nullable(version) and rng.random() < 0.2:
            return None
        if f.type in _INT_BOUNDS:
            bits = _INT_BOUNDS[f.type]
            return rng.choice((-1, 0, 1, -(1 << (bits - 1)), (1 << (bits - 1)) - 1,
                               rng.randrange(-(1 << (bits - 1)), 1 << (bits - 1))))
        if f.type == UINT16:
            return rng.choice((0, 65535, rng.randrange(65536)))
        if f.type == BOOL:
            return not v
        if f.type == STRING:
            return rng.choice(("", "x" * 300, "a/b", "..", "\x00", "é" * 10, v + "\x01" if v else "-"))
        if f.type in (BYTES, RECORDS):
            return rng.choice((b"", rng.randbytes(rng.randrange(1, 80)), (bytes(v) if v else b"")[:-1]))
        if f.type == ARRAY and isinstance(v, list):
            return rng.choice(([], v * rng.randrange(2, 4), v[:1]))
        return v
