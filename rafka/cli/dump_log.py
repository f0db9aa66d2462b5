"""`rafka dump-log`: print the batches, records, index entries or producer state in partition
files, line for line as Kafka's kafka-dump-log.sh (DumpLogSegments) prints them.

Only reads the files. Exit 0 when every file dumped cleanly, 1 when one is missing, unknown
or corrupt, or an index misses its log; problems Kafka's tool reports on stderr go to stderr.
"""
from __future__ import annotations

import argparse
import os
import sys

from rafka.partition_worker.log_dump import dump_file


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "dump-log", help="dump log segments, indexes and producer snapshots", description=__doc__,
        epilog="examples:\n"
               "  rafka dump-log --print-data-log /tmp/kafka-logs/orders-0/00000000000000000000.log\n"
               "  rafka dump-log --verify-index-only /tmp/kafka-logs/orders-0/*.index\n"
               "  rafka dump-log --files 00000000000000000000.log,00000000000000000042.snapshot",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="a .log, .index, .timeindex or .snapshot file")
    p.add_argument("--files", dest="file_lists", action="append", default=[], metavar="FILE1,FILE2,...",
                   help="comma-separated files, as Kafka's tool takes them")
    p.add_argument("--print-data-log", action="store_true",
                   help="print each record with its key and value (as UTF-8)")
    p.add_argument("--deep-iteration", action="store_true",
                   help="print each record's metadata; implied by --print-data-log")
    p.add_argument("--verify-index-only", action="store_true",
                   help="check index files against their log without printing their entries")
    p.add_argument("--max-bytes", type=_non_negative, default=None, metavar="N",
                   help="read at most N bytes of each .log (default: all)")


def run(args: argparse.Namespace) -> int:
    files = list(args.files) + [name for names in args.file_lists for name in names.split(",") if name]
    if not files:
        print("rafka dump-log: no files given (name them, or use --files a.log,b.index)", file=sys.stderr)
        return 2
    failed = False
    try:
        for path in files:
            for line in dump_file(path, print_data_log=args.print_data_log, deep_iteration=args.deep_iteration,
                                  verify_index_only=args.verify_index_only, max_bytes=args.max_bytes):
                print(line.text, file=sys.stderr if line.diagnostic else sys.stdout)
                failed = failed or line.failed
    except BrokenPipeError:  # `rafka dump-log ... | head`: the reader has seen enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return 1 if failed else 0


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0: {text}")
    return value
