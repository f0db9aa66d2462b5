"""`rafka leader-election`: elect partition leaders, like Kafka's kafka-leader-election.sh,
over the ElectLeaders API of any broker (which hands it to the controller).

`--election-type preferred` (or `--preferred`) moves leadership back to each partition's
preferred replica (the first assigned) where it is alive and in sync; `unclean` (or
`--unclean`) elects a live replica outside the ISR for partitions that have no leader, at
the price of the records only the lost ISR held. Partitions are `--all-topic-partitions`, or
`--topic T` with optional `--partition P`. Exit code 0 when every named partition was
elected or needed no election, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import sys

from rafka.common.errors import ErrorCode
from rafka.net.client import KafkaConnection
from rafka.net.protocol import apis

ELECT_LEADERS, METADATA = apis.ELECT_LEADERS.key, apis.METADATA.key
ELECTION_TYPES = {"preferred": 0, "unclean": 1}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("leader-election", help="elect partition leaders (preferred or unclean)", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples:\n  rafka leader-election --election-type preferred --all-topic-partitions\n"
                              "  rafka leader-election --preferred --topic orders --partition 0\n"
                              "  rafka leader-election --unclean --topic orders --output json")
    kind = p.add_mutually_exclusive_group(required=True)
    kind.add_argument("--election-type", choices=sorted(ELECTION_TYPES), type=str.lower)
    kind.add_argument("--preferred", dest="election_type", action="store_const", const="preferred")
    kind.add_argument("--unclean", dest="election_type", action="store_const", const="unclean")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--all-topic-partitions", action="store_true", help="every partition of every topic")
    which.add_argument("--topic", help="one topic (all its partitions unless --partition)")
    p.add_argument("--partition", type=int, help="one partition of --topic")
    p.add_argument("--bootstrap-server", default="127.0.0.1:9092", help="a broker (default 127.0.0.1:9092)")
    p.add_argument("--timeout-ms", type=int, default=60000, help="how long the election may take (default 60000)")
    p.add_argument("--output", choices=("text", "json"), default="text")


def partitions_of(metadata: dict, topic: str, partition: int | None) -> list[tuple[str, int]] | None:
    """The (topic, partition) pairs a request names; None when the topic does not exist."""
    for t in metadata["topics"]:
        if t["name"] == topic and t["error_code"] == ErrorCode.NONE:
            known = sorted(p["partition_index"] for p in t["partitions"])
            return [(topic, p) for p in known if partition is None or p == partition]
    return None


def results_of(answer: dict) -> list[dict]:
    """ElectLeaders' answer as rows: topic, partition, outcome (error name or NONE)."""
    return [{"topic": r["topic"], "partition": p["partition_id"], "outcome": ErrorCode(p["error_code"]).name}
            for r in answer["replica_election_results"] for p in r["partition_result"]]


def run(args: argparse.Namespace) -> int:
    if args.partition is not None and args.topic is None:
        print("Error: --partition needs --topic", file=sys.stderr)
        return 2
    try:
        with KafkaConnection.to(args.bootstrap_server, timeout_s=args.timeout_ms / 1000 + 30) as conn:
            wanted = None
            if args.topic is not None:
                metadata = conn.request(METADATA, 12, {"topics": [{"topic_id": None, "name": args.topic}],
                                                       "allow_auto_topic_creation": False,
                                                       "include_topic_authorized_operations": False})
                wanted = partitions_of(metadata, args.topic, args.partition)
                if not wanted:
                    print(f"Error: no such topic or partition: {args.topic}"
                          + (f"-{args.partition}" if args.partition is not None else ""), file=sys.stderr)
                    return 1
            print(f"asking for a {args.election_type} election...", file=sys.stderr)
            named = None if wanted is None else [
                {"topic": t, "partitions": [p for tt, p in wanted if tt == t]} for t in sorted({t for t, _ in wanted})]
            answer = conn.request(ELECT_LEADERS, 2, {"election_type": ELECTION_TYPES[args.election_type],
                                                     "topic_partitions": named, "timeout_ms": args.timeout_ms})
    except OSError as e:
        print(f"Error: cannot reach {args.bootstrap_server}: {e}", file=sys.stderr)
        return 1
    rows = results_of(answer)
    failed = [r for r in rows if r["outcome"] not in ("NONE", "ELECTION_NOT_NEEDED")]
    if args.output == "json":
        print(json.dumps({"election_type": args.election_type, "results": rows}, indent=2))
    else:
        done = [f"{r['topic']}-{r['partition']}" for r in rows if r["outcome"] == "NONE"]
        if done:
            print(f"Successfully completed leader election ({args.election_type}) for partitions {', '.join(done)}")
        elif not failed:
            print("Valid replica already elected for partitions" if rows else "No partition needed an election")
        for r in failed:
            print(f"Error completing leader election ({args.election_type}) for partition "
                  f"{r['topic']}-{r['partition']}: {r['outcome']}")
    return 1 if failed else 0
