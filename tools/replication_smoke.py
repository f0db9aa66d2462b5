"""Replication smoke run (rafka.replication.enable=true, which is off by default): three
brokers, one RF=3 topic, one acks=all record; prints whether it was acknowledged, each
broker's report and each replica's log end and high watermark. Exit 0 when the record was
acknowledged and every replica holds it, 1 otherwise.

Not a test yet: replication is being completed (see the README and issue 22's note); this
is the reproduction the next step starts from.

example: .venv/bin/python tools/replication_smoke.py --timeout-ms 15000
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout-ms", type=int, default=15000, help="the producer's message timeout")
    args = parser.parse_args()

    import ray
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from rafka.cluster import Cluster
    from rafka.common.config import BrokerConfig

    config = BrokerConfig.from_mapping({"rafka.replication.enable": "true", "default.replication.factor": "3",
                                        "offsets.topic.replication.factor": "1"})
    print("starting 3 brokers...", file=sys.stderr)
    cluster = Cluster(tempfile.mkdtemp(prefix="rafka-repl-"), brokers=3, first_port=0, config=config).start()
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("smoke", 1, 3)])["smoke"].result(60)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                             "message.timeout.ms": args.timeout_ms})
        acked: list = []
        producer.produce("smoke", b"x", partition=0, on_delivery=lambda err, msg: acked.append((err, msg.offset())))
        producer.flush(args.timeout_ms / 1000 + 5)
        print("delivery:", acked)
        for broker, report in cluster.broker_status().items():
            print(f"broker {broker}:", report)
        ends = {}
        for broker in range(3):
            replica = ray.get_actor(f"replica:{broker}:smoke-0", namespace=cluster.namespace)
            status = ray.get(replica.status.remote(), timeout=10)
            ends[broker] = status.log_end_offset
            print(f"replica on broker {broker}: leader {status.leader}, log end {status.log_end_offset}, "
                  f"high watermark {status.high_watermark}")
        ok = bool(acked) and acked[0][0] is None and all(end == 1 for end in ends.values())
        print("OK" if ok else "NOT REPLICATED")
        return 0 if ok else 1
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
