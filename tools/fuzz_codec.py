#!/usr/bin/env python3
"""Offline fuzz of the protocol codec: millions of mutated frames through our decoders.

Seeds are the golden frames from real clients (tests/data/golden/) and an example request and
response of every version of every API in our tables; each frame is a seed mutated by
`tests/frame_mutations.FrameMutator`. Requests go through `codec.decode_request`, responses
through `codec.decode_response` (with the seed's API and version, or another supported one).
The only acceptable failures are our decode errors (`ProtocolError`, and
`UnsupportedVersionError` for a request header naming what our tables lack). A frame that
decodes is encoded again and decoded again, and must give the same body: the encoder takes
whatever the decoder produces. Anything else is counted and shown with the frame, and the
exit code is 1.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "unit" / "protocol")]

from rafka.common.errors import UnsupportedVersionError  # noqa: E402
from rafka.net.protocol import codec  # noqa: E402
from rafka.net.protocol.apis import APIS  # noqa: E402
from rafka.net.protocol.codec import ProtocolError  # noqa: E402
from tests.frame_mutations import FrameMutator, Seed, golden_seeds, table_seeds  # noqa: E402

from _protocol_examples import materialize as _plain  # noqa: E402  (memoryviews as bytes, for comparing)

_VERSIONS = [(api.key, v) for api in APIS.values() for v in api.version_list]


def check_request(frame: bytes) -> str:
    """'ok', 'protocol' or 'unsupported'; raises anything unexpected (AssertionError if the
    decoded body does not survive encode + decode)."""
    try:
        header, body = codec.decode_request(frame)
    except ProtocolError:
        return "protocol"
    except UnsupportedVersionError:
        return "unsupported"
    again = codec.encode_request(header.api_key, header.api_version, header.correlation_id, header.client_id, body)
    header2, body2 = codec.decode_request(again[4:])
    assert (header2, _plain(body2)) == (header, _plain(body)), "request changed by encode + decode"
    return "ok"


def check_response(api_key: int, api_version: int, frame: bytes) -> str:
    try:
        correlation_id, body = codec.decode_response(api_key, api_version, frame)
    except ProtocolError:
        return "protocol"
    again = codec.frame_response(api_key, api_version, correlation_id, body)
    correlation_id2, body2 = codec.decode_response(api_key, api_version, again[4:])
    assert (correlation_id2, _plain(body2)) == (correlation_id, _plain(body)), "response changed by encode + decode"
    return "ok"


def run(frames: int, seed: int, progress_s: float, max_examples: int = 5) -> dict:
    rng = random.Random(seed)
    seeds = golden_seeds() + table_seeds(rng)
    mutator = FrameMutator(rng, seeds)
    outcomes: Counter = Counter()
    kinds: Counter = Counter()
    unexpected: Counter = Counter()
    examples: list[dict] = []
    started = last = time.monotonic()
    for n in range(frames):
        s: Seed = rng.choice(seeds)
        kind, frame = mutator.mutate(s)
        kinds[kind] += 1
        key, version = s.api_key, s.api_version
        if not s.request and rng.random() < 0.1:
            key, version = rng.choice(_VERSIONS)
        try:
            outcome = check_request(frame) if s.request else check_response(key, version, frame)
            outcomes[("request " if s.request else "response ") + outcome] += 1
        except Exception as e:  # noqa: BLE001 - exactly what the fuzzer looks for
            unexpected[type(e).__name__] += 1
            if len(examples) < max_examples:
                examples.append({"frame_number": n, "request": s.request, "api_key": key, "api_version": version,
                                 "mutation": kind, "error": repr(e), "frame_hex": frame.hex()})
        now = time.monotonic()
        if progress_s and now - last >= progress_s:
            last = now
            print(f"{n + 1:>10,} frames, {(n + 1) / (now - started):,.0f}/s, unexpected {sum(unexpected.values())}",
                  file=sys.stderr, flush=True)
    elapsed = time.monotonic() - started
    return {"frames": frames, "seed": seed, "seeds": len(seeds), "seconds": round(elapsed, 2),
            "frames_per_second": round(frames / elapsed) if elapsed else None,
            "outcomes": dict(sorted(outcomes.items())), "mutations": dict(sorted(kinds.items())),
            "unexpected_exceptions": sum(unexpected.values()), "unexpected_by_type": dict(unexpected),
            "examples": examples}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Fuzz the Kafka protocol decoder offline with mutated golden and table frames.",
        epilog="example: .venv/bin/python tools/fuzz_codec.py --frames 1000000 --output json")
    parser.add_argument("--frames", type=int, default=1_000_000, help="how many mutated frames (default 10^6)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (a run is reproducible)")
    parser.add_argument("--progress", type=float, default=5.0, help="seconds between progress lines on stderr (0: none)")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)
    if args.frames < 1:
        parser.error("--frames must be at least 1")
    result = run(args.frames, args.seed, args.progress)
    if args.output == "json":
        print(json.dumps(result))
    else:
        print(f"{result['frames']:,} frames in {result['seconds']} s ({result['frames_per_second']:,}/s) "
              f"from {result['seeds']} seeds; unexpected exceptions: {result['unexpected_exceptions']}")
        for name, count in result["outcomes"].items():
            print(f"  {name:<22} {count:,}")
        for example in result["examples"]:
            print(f"  UNEXPECTED {example}")
    return 0 if result["unexpected_exceptions"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
