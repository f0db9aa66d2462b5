#!/usr/bin/env python
"""Render bench/RESULTS.md from the results files in bench/results/ (one JSON file per scenario,
written by the scenario at its end). Each scenario runs this itself when it records; run it by
hand after editing or removing a results file.

Exit 0 when the page was written and every results file could be read, 1 otherwise.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness.results_file import DEFAULT_RESULTS_DIR  # noqa: E402
from harness.results_page import PAGE_NAME, load_documents, render_results_page  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="example:\n  .venv/bin/python bench/render_results.py")
    parser.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS_DIR,
                        help="the results files (default bench/results)")
    parser.add_argument("--page", type=Path, help=f"the page to write (default {PAGE_NAME} beside --results-dir)")
    args = parser.parse_args(argv)
    page = render_results_page(args.results_dir, args.page)
    documents, unreadable = load_documents(args.results_dir)
    print(f"{page}: {len(documents)} scenario(s)" + (f"; unreadable: {'; '.join(unreadable)}" if unreadable else ""))
    return 1 if unreadable else 0


if __name__ == "__main__":
    sys.exit(main())
