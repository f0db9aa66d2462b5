"""Which of Ray's own services a private Ray starts: only those a broker uses.

`ray.init(address="local")` starts two Python services a broker never calls: the API server
(the dashboard head: job submission and the state API behind `ray list`, started even with
`include_dashboard=False`) and the autoscaler's monitor (a cluster of fixed nodes has nothing to
scale). Its dashboard agent loads every module it can import (metrics reporter, job, log and
event agents), and to choose the agent's mode the driver imports Ray's web stack (aiohttp,
OpenTelemetry): ~1 s of every `ray.init` here. Ray has no `ray.init` switch for any of this, so
`broker_services_only` replaces four private hooks while one Ray starts:
`Node.start_api_server` and `Node.start_monitor` do nothing; `get_dashboard_dependency_error`
answers "missing", so the agent starts `--minimal` (no gRPC or HTTP server) and the driver skips
the import; and the agent's command runs it through `minimal_dashboard_agent`, which loads no
modules, as a minimal Ray install does. Every hook is checked before it is replaced: a Ray whose
internals differ starts as it always did. Measured on this 2-core machine: `ray.init`
6.8 -> 4.3 s, Ray's shutdown 1.5 -> 0.45 s, an idle `rafka up` 11 -> 9 processes and
~620 -> ~550 MiB PSS, its dashboard agent ~1% -> ~0.1% of a core.

Kept: the log monitor (actors' log lines reach `rafka up`'s output), the dashboard agent and
the runtime-env agent (the raylet does not run without both).
"""
from __future__ import annotations

import contextlib
import sys
from typing import Callable, Iterator


def _skip_api_server(self, *, include_dashboard, raise_on_failure) -> None:  # noqa: ANN001 - Ray's Node
    self._webui_url = None


def _skip_monitor(self) -> None:  # noqa: ANN001 - Ray's Node
    return None


def _no_dashboard_dependencies() -> ImportError:
    return ImportError("rafka starts Ray's dashboard agent minimal: it reads no metrics")


def _agent_without_modules(build: Callable[..., list[str]], agent: str) -> Callable[..., list[str]]:
    """Ray's builder of its Python services' commands, with the dashboard agent's (`agent`: Ray's
    name for that component) run through `minimal_dashboard_agent`; left as Ray builds it when
    that is not a plain `python -u`, as under Ray's memory profiler."""
    def build_command(component: str, *args, **kwargs) -> list[str]:  # noqa: ANN002, ANN003 - Ray's
        command = build(component, *args, **kwargs)
        if component == agent and command == [sys.executable, "-u"]:
            return [*command, "-m", "rafka.actors.minimal_dashboard_agent"]
        return command
    return build_command


@contextlib.contextmanager
def broker_services_only() -> Iterator[bool]:
    """While a private Ray starts in this process: no API server, no autoscaler monitor, a
    minimal dashboard agent without modules. Yields whether Ray's hooks were found (False: Ray
    starts as usual)."""
    try:
        from ray._private import node as ray_node
        from ray._private import ray_constants
        from ray._private import services as ray_process_commands
        from ray._private import utils as ray_utils
    except ImportError:
        yield False
        return
    build = getattr(ray_process_commands, "_build_python_executable_command_memory_profileable", None)
    hooks = [(ray_node.Node, "start_api_server", _skip_api_server),
             (ray_node.Node, "start_monitor", _skip_monitor),
             (ray_utils, "get_dashboard_dependency_error", _no_dashboard_dependencies),
             (ray_process_commands, "_build_python_executable_command_memory_profileable",
              _agent_without_modules(build, ray_constants.PROCESS_TYPE_DASHBOARD_AGENT))]
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
