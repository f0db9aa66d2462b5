#!/usr/bin/env python3
"""A recording TCP proxy between Kafka clients and one broker: every request and its response.

Clients connect to the proxy as to a broker. Bytes go through unchanged, except Metadata,
FindCoordinator and DescribeCluster answers, whose broker addresses are rewritten to the
proxy's own, so the clients keep talking through it. Each direction is cut into Kafka frames
(`rafka.net.protocol.frame_log.FrameSplitter`), responses are matched to requests by
correlation id, and the pairs (as the broker sent them, before any rewrite) are kept and
written as a golden-frame file (`frame_log.write_exchanges`).

`tools/record_golden.py` uses it to re-record tests/data/golden/; run alone it records
whatever you point at it until Ctrl-C.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from rafka.net.protocol import codec
from rafka.net.protocol.apis import APIS
from rafka.net.protocol.frame_log import Exchange, FrameSplitter, RequestMatcher, write_exchanges

log = logging.getLogger("record_frames")

METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER = 3, 10, 60
_REWRITTEN = (METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER)


def _rewrite_addresses(value: Any, upstream: tuple[str, int], proxy: tuple[str, int]) -> int:
    """Replace, in a decoded body, every {"host", "port"} equal to `upstream` by `proxy`;
    returns how many were replaced."""
    n = 0
    if isinstance(value, dict):
        if (value.get("host"), value.get("port")) == upstream:
            value["host"], value["port"] = proxy
            n += 1
        for v in value.values():
            n += _rewrite_addresses(v, upstream, proxy)
    elif isinstance(value, list):
        for v in value:
            n += _rewrite_addresses(v, upstream, proxy)
    return n


def rewrite_response(exchange: Exchange, upstream: tuple[str, int], proxy: tuple[str, int]) -> bytes:
    """The response frame (no size prefix) to give the client: `exchange.response`, with broker
    addresses pointing at the proxy for the APIs that carry them."""
    assert exchange.response is not None
    if exchange.api_key not in _REWRITTEN:
        return exchange.response
    try:
        correlation_id, body = codec.decode_response(exchange.api_key, exchange.api_version, exchange.response)
    except (codec.ProtocolError, codec.UnsupportedVersionError) as e:
        log.warning("cannot rewrite %s v%d response: %s", exchange.api_key, exchange.api_version, e)
        return exchange.response
    if not _rewrite_addresses(body, upstream, proxy):
        return exchange.response
    return codec.frame_response(exchange.api_key, exchange.api_version, correlation_id, body)[4:]


class RecordingProxy:
    """Listens on `listen` and forwards each connection to `upstream`, recording exchanges.

    `exchanges` grows as responses arrive (and with unanswered requests when a connection
    ends); it is only touched from the proxy's event loop, so read it after `stop()`.
    """

    def __init__(self, upstream: tuple[str, int], listen: tuple[str, int] = ("127.0.0.1", 0)) -> None:
        self.upstream = upstream
        self._listen = listen
        self.address: tuple[str, int] | None = None
        self.exchanges: list[Exchange] = []
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task] = set()

    async def start(self) -> tuple[str, int]:
        self._server = await asyncio.start_server(self._serve, *self._listen)
        host, port = self._server.sockets[0].getsockname()[:2]
        self.address = (host, port)
        return self.address

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        matcher = RequestMatcher()
        try:
            up_r, up_w = await asyncio.open_connection(*self.upstream)
        except OSError as e:
            log.warning("cannot reach %s:%d: %s", *self.upstream, e)
            client_w.close()
            self._tasks.discard(task)
            return
        try:
            await asyncio.gather(self._requests(client_r, up_w, matcher), self._responses(up_r, client_w, matcher))
        except (ConnectionError, ValueError, asyncio.IncompleteReadError) as e:
            log.debug("connection ended: %s", e)
        except asyncio.CancelledError:
            pass
        finally:
            self.exchanges.extend(matcher.unanswered())
            for w in (client_w, up_w):
                w.close()
            self._tasks.discard(task)

    async def _requests(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                        matcher: RequestMatcher) -> None:
        splitter = FrameSplitter()
        while data := await reader.read(1 << 16):
            for frame in splitter.feed(data):
                matcher.request(frame)
            writer.write(data)
            await writer.drain()
        writer.close()  # the client closed: so does the broker side, which ends _responses

    async def _responses(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                         matcher: RequestMatcher) -> None:
        splitter = FrameSplitter()
        assert self.address is not None
        while data := await reader.read(1 << 16):
            for frame in splitter.feed(data):
                exchange = matcher.response(frame)
                if exchange is None:
                    log.warning("a response with no request (%d bytes)", len(frame))
                    out = frame
                else:
                    self.exchanges.append(exchange)
                    out = rewrite_response(exchange, self.upstream, self.address)
                writer.write(len(out).to_bytes(4, "big") + out)
            await writer.drain()
        writer.close()


class ProxyThread:
    """A `RecordingProxy` on its own event loop in a background thread, for synchronous callers:

        with ProxyThread(("127.0.0.1", 9092)) as proxy:
            run_client(f"127.0.0.1:{proxy.address[1]}")
        proxy.exchanges
    """

    def __init__(self, upstream: tuple[str, int], listen: tuple[str, int] = ("127.0.0.1", 0)) -> None:
        self.proxy = RecordingProxy(upstream, listen)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="record-frames", daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        assert self.proxy.address is not None
        return self.proxy.address

    @property
    def exchanges(self) -> list[Exchange]:
        return self.proxy.exchanges

    def __enter__(self) -> "ProxyThread":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.proxy.start(), self._loop).result(timeout=10)
        return self

    def __exit__(self, *exc: Any) -> None:
        asyncio.run_coroutine_threadsafe(self.proxy.stop(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()


def summary(exchanges: list[Exchange]) -> dict:
    """Counts per API and version, for people and for `--output json`."""
    counts = Counter((e.api_key, e.api_version) for e in exchanges)
    return {"exchanges": len(exchanges),
            "unanswered": sum(1 for e in exchanges if e.response is None),
            "apis": [{"api_key": k, "api_name": APIS[k].name if k in APIS else "?", "api_version": v, "count": n}
                     for (k, v), n in sorted(counts.items())]}


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Record Kafka requests and responses between clients and one broker, as golden frames.",
        epilog="example: tools/record_frames.py --upstream 127.0.0.1:9092 --listen 127.0.0.1:19092 "
               "--out /tmp/frames.bin   # then: kcat -b 127.0.0.1:19092 -L; Ctrl-C to stop")
    parser.add_argument("--upstream", type=_address, required=True, help="the broker, HOST:PORT")
    parser.add_argument("--listen", type=_address, default=("127.0.0.1", 0),
                        help="where clients connect, HOST:PORT (default: a free loopback port)")
    parser.add_argument("--out", type=Path, required=True, help="the frames.bin file to write on exit")
    parser.add_argument("--output", choices=("text", "json"), default="text", help="summary format on stdout")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")

    async def run() -> list[Exchange]:
        proxy = RecordingProxy(args.upstream, args.listen)
        host, port = await proxy.start()
        print(f"listening on {host}:{port}, forwarding to {args.upstream[0]}:{args.upstream[1]}; Ctrl-C to stop",
              file=sys.stderr)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await proxy.stop()
        return proxy.exchanges

    try:
        exchanges = asyncio.run(run())
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("wb") as f:
        write_exchanges(f, exchanges)
    result = summary(exchanges) | {"out": str(args.out)}
    if args.output == "json":
        print(json.dumps(result))
    else:
        print(f"{result['exchanges']} exchanges ({result['unanswered']} unanswered) written to {args.out}")
        for a in result["apis"]:
            print(f"  {a['api_name']:<28} v{a['api_version']:<3} {a['count']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
