"""Keep Python's cyclic garbage collector off what a process keeps for its whole life.

A Ray actor starts with ~90k objects tracked by the collector (the interpreter's modules, Ray's
and ours); every full collection walks all of them. Measured in the front end at 2,000
records/s: a full collection held its event loop for 90 ms, a pause every request under way
then waits out. `gc.freeze()` moves what is alive once the actor has started into a generation
the collector never scans, so later collections walk only what was made since.

The front end and the broker's coordinator call it, once each per broker. Replica processes do
not: a collection at each start would add to the start a creation storm waits on, and a
replica's event loop made no full collection in the runs measured.
"""
from __future__ import annotations

import gc


def freeze_startup_objects() -> None:
    """Collect once, then leave everything still alive out of later collections (call it when
    an actor has finished starting; calling it again adds what was made since)."""
    gc.collect()
    gc.freeze()
