"""Runs Ray's log monitor with a slower idle poll: half a second instead of a tenth.

Ray's log monitor forwards its node's worker output to the drivers (the actors' log lines in
`rafka up`'s output, `rafka.out`). With nothing new to forward it looks again after 0.1 s: it
checks every open log file (a `stat`, an `fstat` and a read each) ten times a second, about
0.5% of a core on an idle broker, the largest share of an idle broker's CPU that is neither a
Ray worker's nor the raylet's. Looking every `IDLE_POLL_S` instead, a line reaches `rafka.out`
up to that much later; none is lost (a file is read on from where it was), and output that
keeps coming is forwarded as fast as before (the monitor only waits when it found nothing).

The raylet of a private Ray (`services.broker_services_only`) starts it as `python -u -m
rafka.actors.ray_hooks.quiet_log_monitor <Ray's log_monitor.py> <its arguments>`, if `fits`. The
script runs from its own source with that one call changed, if the call is there exactly once;
otherwise as it is. It also imports Ray lean (`lean_imports`).
"""
from __future__ import annotations

import importlib.util
import os
import sys

IDLE_POLL_S = 0.5
RAYS_IDLE_POLL = "time.sleep(0.1)"


def fits() -> bool:
    """Whether this Ray's log monitor script has Ray 2.60's idle poll exactly once (read, not imported)."""
    spec = importlib.util.find_spec("ray._private.log_monitor")
    if spec is None or not spec.origin:
        return False
    with open(spec.origin, encoding="utf-8") as f:
        return f.read().count(RAYS_IDLE_POLL) == 1


def quieter(source: str) -> str:
    """Ray's log monitor source with its idle poll at `IDLE_POLL_S`; unchanged unless that poll
    is found exactly once."""
    if source.count(RAYS_IDLE_POLL) != 1:
        return source
    return source.replace(RAYS_IDLE_POLL, f"time.sleep({IDLE_POLL_S})")


def main(argv: list[str]) -> None:
    """Run the log monitor script `argv[1]` with the arguments after it, its idle poll slower."""
    if len(argv) < 2:
        raise SystemExit("usage: python -m rafka.actors.ray_hooks.quiet_log_monitor <log_monitor.py> [args...]")
    from rafka.actors.ray_hooks.lean_imports import lean_ray_imports

    script = argv[1]
    with open(script, encoding="utf-8") as f:
        code = compile(quieter(f.read()), script, "exec")   # (tracebacks name Ray's file and lines)
    lean_ray_imports()
    sys.argv = argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))   # as when Python runs the script itself
    exec(code, {"__name__": "__main__", "__file__": script, "__builtins__": __builtins__})


if __name__ == "__main__":
    main(sys.argv)
