"""The `rafka` command: one subcommand per module under `rafka/cli/`.

Exit codes: 0 ok, 1 failure, 2 usage. Progress goes to stderr, results to stdout.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys

from rafka.actors.ray_env import use_private_ray_environment
from rafka.actors.ray_hooks.lean_imports import lean_ray_imports
from rafka.cli import broker, down, dump_log, groups, leader_election, log_dirs, status, topics, up

COMMANDS = {"up": up, "down": down, "status": status, "broker": broker, "dump-log": dump_log,
            "groups": groups, "topics": topics, "leader-election": leader_election, "log-dirs": log_dirs}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rafka", description="A Kafka-compatible commit-log broker on Ray.",
        epilog="example: rafka up --brokers 1 --detach && rafka status && rafka down",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log-level", default=None,
                        help="logging level (default WARNING, or $RAFKA_LOG_LEVEL); the brokers' actors "
                             "started by `up` log at it too")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if args.log_level is not None:   # (the actors this process starts inherit it through Ray)
        os.environ["RAFKA_LOG_LEVEL"] = args.log_level
    level = args.log_level or os.environ.get("RAFKA_LOG_LEVEL") or "WARNING"
    logging.basicConfig(level=getattr(logging, level.upper(), logging.WARNING),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s", stream=sys.stderr)
    if not getattr(args, "ray_address", None):
        # rafka's own Ray, started here (`up`) or joined on loopback (every other command, through
        # the run state): its environment before anything imports Ray, which reads
        # RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER at import (without it, a join of 127.0.0.1 goes to the
        # machine's address). `up --ray-address` joins a user's Ray, which keeps its environment.
        use_private_ray_environment()
    lean_ray_imports()   # (before any command imports Ray: ~0.7 s less to connect to it)
    return COMMANDS[args.command].run(args)


if __name__ == "__main__":
    sys.exit(main())
