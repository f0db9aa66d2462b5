"""One consumer-group member, run as its own process by the group tests, so a test can stop it
cleanly (SIGTERM: close, which leaves the group) or kill it (SIGKILL: its share moves only
after the session timeout).

    python -m tests.interop.group_member CLIENT BOOTSTRAP TOPIC GROUP [--assignor NAME]

Prints one JSON object per line on stdout:
  {"event": "assigned", "partitions": [0, 3]}      after every rebalance (the full assignment)
  {"event": "records", "records": [[p, offset, "value"], ...]}   what a poll returned, committed
Commits synchronously after each poll's records were printed ("processed"), so a restarted
member resumes exactly after the last printed record.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys

SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 1000


def emit(event: str, **fields) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


class Stop:
    def __init__(self) -> None:
        self.requested = False
        signal.signal(signal.SIGTERM, self._set)

    def _set(self, *_) -> None:
        self.requested = True


def run_kafka_python(args: argparse.Namespace, stop: Stop) -> None:
    from kafka import KafkaConsumer
    from kafka.consumer.subscription_state import ConsumerRebalanceListener

    consumer = KafkaConsumer(bootstrap_servers=args.bootstrap, group_id=args.group, enable_auto_commit=False,
                             auto_offset_reset="earliest", session_timeout_ms=SESSION_TIMEOUT_MS,
                             heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS)

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked) -> None:
            pass

        def on_partitions_assigned(self, assigned) -> None:
            emit("assigned", partitions=sorted(tp.partition for tp in consumer.assignment()))

    consumer.subscribe([args.topic], listener=Listener())
    while not stop.requested:
        polled = consumer.poll(timeout_ms=200)
        batch = [[m.partition, m.offset, m.value.decode()] for msgs in polled.values() for m in msgs]
        if batch:
            emit("records", records=batch)
            consumer.commit()
    consumer.close()


def run_confluent(args: argparse.Namespace, stop: Stop) -> None:
    from confluent_kafka import Consumer

    config = {"bootstrap.servers": args.bootstrap, "group.id": args.group, "enable.auto.commit": False,
              "auto.offset.reset": "earliest", "session.timeout.ms": SESSION_TIMEOUT_MS,
              "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS}
    if args.assignor:
        config["partition.assignment.strategy"] = args.assignor
    consumer = Consumer(config)

    owned: set[int] = set()  # from the callbacks: under cooperative-sticky they are incremental

    def on_assign(_c, partitions) -> None:
        owned.update(tp.partition for tp in partitions)
        emit("assigned", partitions=sorted(owned))

    def on_revoke(_c, partitions) -> None:
        owned.difference_update(tp.partition for tp in partitions)
        emit("assigned", partitions=sorted(owned))

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    while not stop.requested:
        msgs = consumer.consume(500, timeout=0.2)
        batch = [[m.partition(), m.offset(), m.value().decode()] for m in msgs if m.error() is None]
        if batch:
            emit("records", records=batch)
            consumer.commit(asynchronous=False)
    consumer.close()


def run_aiokafka(args: argparse.Namespace, stop: Stop) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.abc import ConsumerRebalanceListener

    async def run() -> None:
        consumer = AIOKafkaConsumer(bootstrap_servers=args.bootstrap, group_id=args.group,
                                    enable_auto_commit=False, auto_offset_reset="earliest",
                                    session_timeout_ms=SESSION_TIMEOUT_MS,
                                    heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS)

        class Listener(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked) -> None:
                pass

            async def on_partitions_assigned(self, assigned) -> None:
                emit("assigned", partitions=sorted(tp.partition for tp in consumer.assignment()))

        await consumer.start()
        consumer.subscribe([args.topic], listener=Listener())
        try:
            while not stop.requested:
                polled = await consumer.getmany(timeout_ms=200)
                batch = [[m.partition, m.offset, m.value.decode()] for msgs in polled.values() for m in msgs]
                if batch:
                    emit("records", records=batch)
                    await consumer.commit()
        finally:
            await consumer.stop()

    asyncio.run(run())


RUNNERS = {"kafka-python": run_kafka_python, "confluent-kafka": run_confluent, "aiokafka": run_aiokafka}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("client", choices=sorted(RUNNERS))
    parser.add_argument("bootstrap")
    parser.add_argument("topic")
    parser.add_argument("group")
    parser.add_argument("--assignor", help="confluent-kafka partition.assignment.strategy")
    args = parser.parse_args(argv)
    RUNNERS[args.client](args, Stop())
    emit("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
