"""`make demo`: a one-broker rafka cluster round-trips a million records with confluent-kafka.

Brings up the embedded cluster (private ZooKeeper, local Ray, one broker), creates a
6-partition topic, produces 1,000,000 records of 100 bytes, consumes them all back and
verifies count, order per partition and bytes, printing records/s and MB/s both ways.
Exit 0 when every record came back intact.
"""
from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import time

from rafka.cluster import Cluster

TOPIC = "demo"
PARTITIONS = 6


def record_value(i: int, size: int) -> bytes:
    """Record i's value: its number, then filler that depends on it (so any mix-up shows)."""
    head = b"%012d:" % i
    return (head + bytes([65 + i % 26]) * size)[:size]


def free_port(preferred: int) -> int:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", preferred))
            return preferred
        except OSError:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]


def progress(label: str, done: int, total: int, started: float) -> None:
    rate = done / max(time.monotonic() - started, 1e-9)
    print(f"\r  {label}: {done:>9,}/{total:,} records ({rate:,.0f}/s)", end="", file=sys.stderr, flush=True)


def produce(bootstrap: str, count: int, size: int) -> float:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5,
                         "queue.buffering.max.messages": 1_000_000, "enable.idempotence": False})
    failures: list[str] = []

    def on_delivery(err, msg) -> None:
        if err is not None:
            failures.append(str(err))

    started = time.monotonic()
    for i in range(count):
        while True:
            try:
                producer.produce(TOPIC, record_value(i, size), partition=i % PARTITIONS, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 100_000 == 0:
            producer.poll(0)
            progress("produced", i, count, started)
    remaining = producer.flush(120)
    elapsed = time.monotonic() - started
    producer.close()  # its connections end here, not at garbage collection after the broker stopped
    progress("produced", count, count, started)
    print(file=sys.stderr)
    if remaining or failures:
        raise SystemExit(f"produce failed: {remaining} undelivered, {len(failures)} errors, e.g. {failures[:3]}")
    return elapsed


def consume_and_verify(bootstrap: str, count: int, size: int) -> float:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "rafka-demo", "enable.auto.commit": False,
                         "fetch.max.bytes": 52428800, "enable.partition.eof": False,
                         "fetch.queue.backoff.ms": 20})  # the verifying loop is slower than the broker
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    expected_next = {p: p for p in range(PARTITIONS)}  # record numbers go round-robin over partitions
    expected_offset = {p: 0 for p in range(PARTITIONS)}
    seen = 0
    started = time.monotonic()
    deadline = started + 300
    while seen < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"consume timed out after {seen:,} records")
        for msg in consumer.consume(10_000, timeout=1.0):
            if msg.error():
                raise SystemExit(f"consume error: {msg.error()}")
            p = msg.partition()
            i = expected_next[p]
            if msg.offset() != expected_offset[p] or msg.value() != record_value(i, size):
                raise SystemExit(f"partition {p} offset {msg.offset()}: expected record {i} at offset "
                                 f"{expected_offset[p]}, got {msg.value()[:20]!r}")
            expected_next[p] += PARTITIONS
            expected_offset[p] += 1
            seen += 1
        if seen % 100_000 < 10_000 or seen == count:
            progress("consumed", seen, count, started)
    elapsed = time.monotonic() - started
    print(file=sys.stderr)
    consumer.close()
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="example: python -m rafka.demo --records 100000")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100, help="record value size in bytes (default 100)")
    args = parser.parse_args(argv)
    from confluent_kafka.admin import AdminClient, NewTopic

    with tempfile.TemporaryDirectory(prefix="rafka-demo-") as data_dir:
        print("starting a one-broker rafka cluster (ZooKeeper, Ray, broker)...", file=sys.stderr)
        started = time.monotonic()
        with Cluster(data_dir, brokers=1, first_port=free_port(9092)) as cluster:
            bootstrap = cluster.bootstrap_servers
            print(f"serving at {bootstrap} after {time.monotonic() - started:.1f} s", file=sys.stderr)
            admin = AdminClient({"bootstrap.servers": bootstrap})
            admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(60)
            del admin  # no close(): dropping it ends its connections before the broker stops
            print(f"created topic {TOPIC!r} with {PARTITIONS} partitions", file=sys.stderr)
            megabytes = args.records * args.size / 1e6
            produce_s = produce(bootstrap, args.records, args.size)
            consume_s = consume_and_verify(bootstrap, args.records, args.size)
            print(f"produce: {args.records / produce_s:12,.0f} records/s {megabytes / produce_s:8.1f} MB/s")
            print(f"consume: {args.records / consume_s:12,.0f} records/s {megabytes / consume_s:8.1f} MB/s")
            print(f"verified: {args.records:,} records of {args.size} B came back in order per partition, "
                  "byte for byte")
            print("shutting down...", file=sys.stderr)
    print("done", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
