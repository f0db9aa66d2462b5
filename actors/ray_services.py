"""Which of Ray's own services a private Ray starts: only those a broker uses.

`ray.init(address="local")` starts two Python services a broker never calls: the API server
(the dashboard head: job submission and the state API behind `ray list`, started even with
`include_dashboard=False`) and the autoscaler's monitor (a cluster of fixed nodes has nothing to
scale). Its dashboard agent loads every module it can import (metrics reporter, job, log and
event agents), and to choose the agent's mode the driver imports Ray's web stack (aiohttp,
OpenTelemetry): ~1 s of every `ray.init` here. Ray has no `ray.init` switch for any of this, so
`broker_services_only` replaces six private hooks while one Ray starts:
`Node.start_api_server` and `Node.start_monitor` do nothing; `get_dashboard_dependency_error`
answers "missing", so the agent starts `--minimal` (no gRPC or HTTP server) and the driver skips
the import; and the agent's command runs it through `minimal_dashboard_agent`, which loads no
modules, as a minimal Ray install does. The raylet starts its Python workers (every actor of a
broker) through `lean_worker`: Ray's worker without the imports a broker never uses
(`lean_imports`), an actor's start ~1.0-1.2 s -> ~0.5 s. The log monitor runs through
`quiet_log_monitor`: it looks for new output every 0.5 s instead of 0.1 s. Every hook is
checked before it is replaced: a Ray whose internals differ starts as it always did. Measured
on this 2-core machine: `ray.init` 6.8 -> 4.3 s, Ray's shutdown 1.5 -> 0.45 s, an idle
`rafka up` 11 -> 9 processes and ~620 -> ~550 MiB PSS, its dashboard agent ~1% -> ~0.1% of a
core.

Kept: the log monitor (actors' log lines reach `rafka up`'s output), the dashboard agent and
the runtime-env agent (the raylet does not run without both).
"""
from __future__ import annotations

import contextlib
import inspect
import os
import sys
from typing import Any, Callable, Iterator

# Ray's workers of a private Ray run through this script (Ray's worker, fewer imports at start).
LEAN_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lean_worker.py")


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


def _lean_workers(start_raylet: Callable[..., Any]) -> Callable[..., Any]:
    """Ray's `start_raylet`, with the raylet told to start its Python workers through
    `lean_worker` (Ray's worker, with its unused imports deferred) when it would start Ray's
    own `default_worker.py`; any other worker path is left as given."""
    signature = inspect.signature(start_raylet)

    def start(*args, **kwargs) -> Any:  # noqa: ANN002, ANN003 - Ray's
        bound = signature.bind(*args, **kwargs)
        path = bound.arguments.get("worker_path")
        if isinstance(path, str) and os.path.basename(path) == "default_worker.py":
            bound.arguments["worker_path"] = LEAN_WORKER
        return start_raylet(*bound.args, **bound.kwargs)
    return start


def _quiet_log_monitor(start_ray_process: Callable[..., Any], log_monitor: str) -> Callable[..., Any]:
    """Ray's `start_ray_process`, with the log monitor's command (`log_monitor`: Ray's name for
    that component) run through `quiet_log_monitor` when it is a plain `python -u
    log_monitor.py ...`; every other process as given."""
    def start(command: list[str], process_type: str, *args, **kwargs) -> Any:  # noqa: ANN002, ANN003 - Ray's
        if process_type == log_monitor and len(command) >= 3 and command[:2] == [sys.executable, "-u"] \
                and os.path.basename(command[2]) == "log_monitor.py":
            command = [sys.executable, "-u", "-m", "rafka.actors.quiet_log_monitor", *command[2:]]
        return start_ray_process(command, process_type, *args, **kwargs)
    return start


@contextlib.contextmanager
def broker_services_only() -> Iterator[bool]:
    """While a private Ray starts in this process: no API server, no autoscaler monitor, a
    minimal dashboard agent without modules, lean workers, a quieter log monitor. Yields
    whether Ray's hooks were found (False: Ray starts as usual)."""
    try:
        from ray._private import node as ray_node
        from ray._private import ray_constants
        from ray._private import services as ray_process_commands
        from ray._private import utils as ray_utils
    except ImportError:
        yield False
        return
    # (where, what, how: the replacement, given Ray's original)
    hooks = [(ray_node.Node, "start_api_server", lambda _original: _skip_api_server),
             (ray_node.Node, "start_monitor", lambda _original: _skip_monitor),
             (ray_utils, "get_dashboard_dependency_error", lambda _original: _no_dashboard_dependencies),
             (ray_process_commands, "_build_python_executable_command_memory_profileable",
              lambda build: _agent_without_modules(build, ray_constants.PROCESS_TYPE_DASHBOARD_AGENT)),
             (ray_process_commands, "start_raylet", _lean_workers),
             (ray_process_commands, "start_ray_process",
              lambda start: _quiet_log_monitor(start, ray_constants.PROCESS_TYPE_LOG_MONITOR))]
    originals = [(owner, name, getattr(owner, name, None)) for owner, name, _ in hooks]
    if not all(callable(original) for _, _, original in originals) or \
            "worker_path" not in inspect.signature(ray_process_commands.start_raylet).parameters:
        yield False
        return
    for (owner, name, replace), (_, _, original) in zip(hooks, originals):
        setattr(owner, name, replace(original))
    try:
        yield True
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)
