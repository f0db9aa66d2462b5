"""Printing command results: aligned text tables (JSON is `json.dumps` of the same data)."""
from __future__ import annotations

import argparse
from typing import Any


def trailing_options() -> argparse.ArgumentParser:
    """A parent parser that also takes `--bootstrap-server` and `--output` after a command's
    action (`rafka topics list --output json`); SUPPRESS keeps the action's parser from
    resetting what was given before the action."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--bootstrap-server", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    common.add_argument("--output", choices=("text", "json"), default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return common


def admin_command(sub: argparse._SubParsersAction, name: str, help: str, description: str | None,
                  examples: list[str]) -> tuple[argparse._SubParsersAction, argparse.ArgumentParser]:
    """A `rafka NAME ACTION` command that talks to a broker, as `kafka-topics.sh` and
    `kafka-consumer-groups.sh` do: `--bootstrap-server` and `--output`, accepted before or
    after the action. Returns the actions' subparsers and the parent each action takes."""
    p = sub.add_parser(name, help=help, description=description, formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples:\n" + "\n".join(f"  {e}" for e in examples))
    p.add_argument("--bootstrap-server", default="127.0.0.1:9092", help="a broker (default 127.0.0.1:9092)")
    p.add_argument("--output", choices=("text", "json"), default="text")
    return p.add_subparsers(dest="action", metavar="ACTION", required=True), trailing_options()


def print_table(headers: list[str], rows: list[list[Any]]) -> None:
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows)] if rows else [len(h) for h in headers]
    for row in [headers, *rows]:
        print(" ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip())
