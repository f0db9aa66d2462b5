"""One consumer-group member, run as its own process by the group tests, so a test can stop it
cleanly (SIGTERM: close, which leaves the group) or kill it (SIGKILL: its share moves only
after the session timeout).

    python -m tests.interop.group_member CLIENT BOOTSTRAP TOPIC GROUP [--assignor NAME] [--instance-id ID]

Prints one JSON object per line on stdout:
  {"event": "assigned", "partitions": [0, 3]}      after every rebalance (the full assignment)
  {"event": "records", "records": [[p, offset, "value"], ...]}   what a poll returned, committed
  {"event": "commit_failed", "error": "IllegalGenerationError"}   a commit the group refused; the
                                                   member goes on polling, which rejoins the group
  {"event": "fatal", "error": "..."}              the client gave up (a fenced static member): exit 3
Commits synchronously after each poll's records were printed ("processed"), so a restarted
member resumes exactly after the last printed record. `--instance-id` makes it a static member.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys

SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 1000
FATAL_EXIT = 3


class Fatal(Exception):
    """The client cannot go on (e.g. FENCED_INSTANCE_ID): the member reports it and exits."""


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

    from kafka import errors

    consumer = KafkaConsumer(bootstrap_servers=args.bootstrap, group_id=args.group, enable_auto_commit=False,
                             auto_offset_reset="earliest", session_timeout_ms=SESSION_TIMEOUT_MS,
                             heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS, group_instance_id=args.instance_id)

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked) -> None:
            pass

        def on_partitions_assigned(self, assigned) -> None:
            emit("assigned", partitions=sorted(tp.partition for tp in consumer.assignment()))

    consumer.subscribe([args.topic], listener=Listener())
    while not stop.requested:
        try:
            # (kafka-python 3.0 drops a SyncGroup answer that comes after its poll's timeout and
            # joins again: a timeout longer than a join lets a rebalance finish within one poll)
            polled = consumer.poll(timeout_ms=2000)
            batch = [[m.partition, m.offset, m.value.decode()] for msgs in polled.values() for m in msgs]
            if batch:
                emit("records", records=batch)
                consumer.commit()
        except errors.FencedInstanceIdError as e:
            raise Fatal(type(e).__name__) from e
        except (errors.CommitFailedError, errors.RebalanceInProgressError, errors.UnknownMemberIdError,
                errors.IllegalGenerationError) as e:
            emit("commit_failed", error=type(e).__name__)
    consumer.close()


def run_confluent(args: argparse.Namespace, stop: Stop) -> None:
    from confluent_kafka import Consumer, KafkaError, KafkaException

    def is_fatal(err) -> bool:
        # A fenced consumer's error has code _FATAL but fatal() may be False (confluent-kafka-python #869).
        return err.fatal() or err.code() == KafkaError._FATAL

    config = {"bootstrap.servers": args.bootstrap, "group.id": args.group, "enable.auto.commit": False,
              "auto.offset.reset": "earliest", "session.timeout.ms": SESSION_TIMEOUT_MS,
              "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS}
    if args.assignor:
        config["partition.assignment.strategy"] = args.assignor
    if args.instance_id:
        config["group.instance.id"] = args.instance_id
    fatal: list[str] = []
    config["error_cb"] = lambda err: fatal.append(err.str()) if is_fatal(err) else None
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
        fatal += [m.error().str() for m in msgs if m.error() is not None and is_fatal(m.error())]
        if fatal:
            raise Fatal(fatal[0])
        batch = [[m.partition(), m.offset(), m.value().decode()] for m in msgs if m.error() is None]
        if batch:
            emit("records", records=batch)
            try:
                consumer.commit(asynchronous=False)
            except KafkaException as e:
                if is_fatal(e.args[0]):
                    raise Fatal(e.args[0].str()) from e
                emit("commit_failed", error=e.args[0].name())
    consumer.close()


def run_aiokafka(args: argparse.Namespace, stop: Stop) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.abc import ConsumerRebalanceListener

    async def run() -> None:
        from aiokafka import errors

        consumer = AIOKafkaConsumer(bootstrap_servers=args.bootstrap, group_id=args.group,
                                    enable_auto_commit=False, auto_offset_reset="earliest",
                                    session_timeout_ms=SESSION_TIMEOUT_MS,
                                    heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
                                    group_instance_id=args.instance_id)

        class Listener(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked) -> None:
                pass

            async def on_partitions_assigned(self, assigned) -> None:
                emit("assigned", partitions=sorted(tp.partition for tp in consumer.assignment()))

        await consumer.start()
        consumer.subscribe([args.topic], listener=Listener())
        try:
            while not stop.requested:
                try:
                    polled = await consumer.getmany(timeout_ms=200)
                    batch = [[m.partition, m.offset, m.value.decode()] for msgs in polled.values() for m in msgs]
                    if batch:
                        emit("records", records=batch)
                        await consumer.commit()
                except (errors.CommitFailedError, errors.RebalanceInProgressError, errors.UnknownMemberIdError,
                        errors.IllegalGenerationError, errors.IllegalStateError) as e:
                    emit("commit_failed", error=type(e).__name__)
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
    parser.add_argument("--instance-id", help="group.instance.id: a static member")
    args = parser.parse_args(argv)
    try:
        RUNNERS[args.client](args, Stop())
    except Fatal as e:
        emit("fatal", error=str(e))
        return FATAL_EXIT
    emit("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
