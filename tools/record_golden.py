#!/usr/bin/env python3
"""Re-record tests/data/golden/: real clients doing their ordinary work through a recording
proxy in front of a rafka broker (see tests/data/golden/README.md).

Starts a one-broker cluster of its own (private ZooKeeper, local Ray) unless --bootstrap
names a running broker, then runs each client's scenario (`tools/golden_clients.py`) through
`tools/record_frames.py`'s proxy and keeps a modest selection of the exchanges: at most
--per-version of each (API, version), identical requests once, none over --max-frame-bytes.
Writes <out-dir>/<client>/frames.bin and index.json (one line per exchange, for people).
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from golden_clients import SCENARIOS  # noqa: E402
from record_frames import ProxyThread, summary  # noqa: E402

from rafka.net.protocol.apis import APIS  # noqa: E402
from rafka.net.protocol.frame_log import Exchange, write_exchanges  # noqa: E402

log = logging.getLogger("record_golden")
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "tests" / "data" / "golden"


def select(exchanges: list[Exchange], per_version: int, max_frame_bytes: int) -> list[Exchange]:
    """A small, varied sample: each distinct request once (correlation id aside), at most
    `per_version` per (API, version), no frame above `max_frame_bytes`."""
    kept: list[Exchange] = []
    seen: set[bytes] = set()
    counts: Counter = Counter()
    for e in exchanges:
        if len(e.request) > max_frame_bytes or (e.response is not None and len(e.response) > max_frame_bytes):
            continue
        identity = e.request[:4] + e.request[8:]
        if identity in seen or counts[(e.api_key, e.api_version)] >= per_version:
            continue
        seen.add(identity)
        counts[(e.api_key, e.api_version)] += 1
        kept.append(e)
    return kept


def index(exchanges: list[Exchange]) -> list[dict]:
    return [{"api_key": e.api_key, "api_name": APIS[e.api_key].name if e.api_key in APIS else "?",
             "api_version": e.api_version, "request_bytes": len(e.request),
             "response_bytes": None if e.response is None else len(e.response)} for e in exchanges]


def record(bootstrap: str, clients: list[str], out_dir: Path, per_version: int, max_frame_bytes: int) -> dict:
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    results = {}
    for client in clients:
        log.info("recording %s", client)
        suffix = uuid.uuid4().hex[:8]
        with ProxyThread((host, int(port))) as proxy:
            SCENARIOS[client](f"{proxy.address[0]}:{proxy.address[1]}", f"golden-{client}-{suffix}",
                              f"golden-group-{client}-{suffix}")
        kept = select(proxy.exchanges, per_version, max_frame_bytes)
        target = out_dir / client
        target.mkdir(parents=True, exist_ok=True)
        with (target / "frames.bin").open("wb") as f:
            write_exchanges(f, kept)
        (target / "index.json").write_text(json.dumps(index(kept), indent=0) + "\n", encoding="utf-8")
        results[client] = summary(kept) | {"recorded": len(proxy.exchanges),
                                           "bytes": (target / "frames.bin").stat().st_size}
        log.info("  %s: kept %d of %d exchanges, %d bytes", client, len(kept), len(proxy.exchanges),
                 results[client]["bytes"])
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Record golden Kafka frames from real clients (kafka-python, confluent-kafka, aiokafka, kcat).",
        epilog="example: .venv/bin/python tools/record_golden.py --clients kcat aiokafka --output json")
    parser.add_argument("--clients", nargs="+", choices=sorted(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument("--bootstrap", help="a running broker HOST:PORT (default: start a one-broker cluster)")
    parser.add_argument("--out-dir", type=Path, default=DEFAULT_OUT, help=f"default {DEFAULT_OUT}")
    parser.add_argument("--per-version", type=int, default=10, help="exchanges kept per (API, version)")
    parser.add_argument("--max-frame-bytes", type=int, default=32768, help="skip exchanges with a larger frame")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    try:
        if args.bootstrap:
            results = record(args.bootstrap, args.clients, args.out_dir, args.per_version, args.max_frame_bytes)
        else:
            from rafka.cluster import Cluster

            with tempfile.TemporaryDirectory(prefix="rafka-golden-") as data_dir, \
                    Cluster(data_dir, brokers=1, first_port=0) as cluster:
                results = record(cluster.bootstrap_servers, args.clients, args.out_dir, args.per_version,
                                 args.max_frame_bytes)
    except Exception as e:  # noqa: BLE001 - a command reports, it does not dump a traceback
        logging.getLogger().exception("recording failed")
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps(results))
    else:
        for client, r in results.items():
            print(f"{client}: {r['exchanges']} exchanges kept of {r['recorded']} ({r['bytes']} bytes), "
                  f"{len(r['apis'])} API versions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
