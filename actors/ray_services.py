"""Which of Ray's own services a private Ray starts: only those a broker uses.

`ray.init(address="local")` starts, beside the GCS and the raylet, services a broker never
calls: the API server (the dashboard head: job submission and the state API behind `ray list`,
started even with `include_dashboard=False`), a dashboard agent with its gRPC and HTTP servers
and metrics exporter, and the autoscaler's monitor (a cluster of fixed nodes has nothing to
scale). Each is a Python process that imports a large part of Ray and its web stack at start
and then ticks while idle. Ray has no switch for them in `ray.init`, so `broker_services_only`
replaces, while one Ray starts, the two private hooks that start them: `Node.start_api_server`
and `Node.start_monitor` do nothing, and the dashboard agent starts `--minimal` (Ray's own mode
for an install without the dashboard's dependencies: no gRPC or HTTP server). Deciding that
agent's mode is also what made the driver import Ray's web stack (aiohttp, OpenTelemetry): ~1 s
of every `ray.init` here. Measured on this 2-core machine: `ray.init` 6.8 -> 4.3 s, Ray's
shutdown 1.5 -> 0.45 s, an idle `rafka up` 11 -> 9 processes and ~620 -> ~545 MiB PSS.
A Ray whose internals differ starts as it always did: every hook is checked before it is
replaced.

Kept: the log monitor (actors' log lines reach `rafka up`'s output) and the runtime-env agent
(the raylet asks it before every worker start).
"""
from __future__ import annotations

import contextlib
from typing import Iterator


def _skip_api_server(self, *, include_dashboard, raise_on_failure) -> None:  # noqa: ANN001 - Ray's Node
    self._webui_url = None


def _skip_monitor(self) -> None:  # noqa: ANN001 - Ray's Node
    return None


def _no_dashboard_dependencies() -> ImportError:
    return ImportError("rafka starts Ray's dashboard agent minimal: it reads no metrics")


@contextlib.contextmanager
def broker_services_only() -> Iterator[bool]:
    """While a private Ray starts in this process: no API server, no autoscaler monitor, a
    minimal dashboard agent. Yields whether Ray's hooks were found (False: Ray starts as usual)."""
    try:
        from ray._private import node as ray_node
        from ray._private import utils as ray_utils
    except ImportError:
        yield False
        return
    hooks = [(ray_node.Node, "start_api_server", _skip_api_server),
             (ray_node.Node, "start_monitor", _skip_monitor),
             (ray_utils, "get_dashboard_dependency_error", _no_dashboard_dependencies)]
    if not all(callable(getattr(owner, name, None)) for owner, name, _ in hooks):
        yield False
        return
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in hooks]
    for owner, name, replacement in hooks:
        setattr(owner, name, replacement)
    try:
        yield True
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)
