"""A bounded random-bytes test of the request decoder: only protocol errors, no blow-ups."""
from __future__ import annotations

import random
import tracemalloc

from rafka.common.errors import UnsupportedVersionError
from rafka.net.protocol import codec
from rafka.net.protocol.apis import APIS
from rafka.net.protocol.codec import ProtocolError

from _protocol_examples import example_body

N_FRAMES = 3000


def _valid_frames(rng: random.Random) -> list[bytes]:
    frames = []
    for api in APIS.values():
        for v in api.version_list:
            body = example_body(api.request, v, nulls=rng.random() < 0.3)
            frames.append(codec.encode_request(api.key, v, rng.randrange(1 << 31), "fz", body)[4:])
    return frames


def _mutate(rng: random.Random, frame: bytes) -> bytes:
    b = bytearray(frame)
    kind = rng.randrange(5)
    if kind == 0:  # truncate
        return bytes(b[: rng.randrange(len(b))])
    if kind == 1:  # flip random bytes
        for _ in range(rng.randrange(1, 6)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif kind == 2:  # plant a huge length / varint somewhere after the header
        i = rng.randrange(8, max(9, len(b) - 4))
        b[i:i + 4] = rng.choice([b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe", b"\xff\xff\xff\xff", b"\x80\x80\x80\x80"])
    elif kind == 3:  # random tail
        i = rng.randrange(len(b))
        b[i:] = rng.randbytes(rng.randrange(64))
    else:  # pure noise with a valid-looking header
        b[10:] = rng.randbytes(rng.randrange(200))
    return bytes(b)


def test_random_and_mutated_frames_only_raise_protocol_errors():
    rng = random.Random(20240611)
    valid = _valid_frames(rng)
    outcomes = {"ok": 0, "protocol": 0, "unsupported": 0}
    tracemalloc.start()
    try:
        for i in range(N_FRAMES):
            if i % 10 == 0:
                frame = rng.randbytes(rng.randrange(0, 80))
            else:
                frame = _mutate(rng, rng.choice(valid))
            try:
                codec.decode_request(memoryview(frame))
                outcomes["ok"] += 1
            except ProtocolError:
                outcomes["protocol"] += 1
            except UnsupportedVersionError:
                outcomes["unsupported"] += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * 1024 * 1024, f"decoder allocated {peak} bytes at peak"
    assert outcomes["protocol"] > N_FRAMES // 10 and outcomes["ok"] > 0
