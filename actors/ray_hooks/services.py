"""Which of Ray's own services a private Ray starts, and how: only those a broker uses, lean.

`ray.init(address="local")` starts two Python services a broker never calls: the API server
(the dashboard head: job submission and the state API behind `ray list`, started even with
`include_dashboard=False`) and the autoscaler's monitor (a cluster of fixed nodes has nothing to
scale). Its dashboard agent loads every module it can import (metrics reporter, job, log and
event agents), and to choose the agent's mode the driver imports Ray's web stack (aiohttp,
OpenTelemetry): ~1 s of every `ray.init` here. Ray has no `ray.init` switch for any of this, so
`broker_services_only` replaces six private functions of Ray 2.60 while one Ray starts, as five
hooks:

- `no_api_server`, `no_autoscaler_monitor`: `Node.start_api_server` and `Node.start_monitor` do nothing;
- `minimal_dashboard_agent`: `get_dashboard_dependency_error` answers "missing", so the agent
  starts `--minimal` (no gRPC or HTTP server) and the driver skips the import, and the agent's
  command runs it through `minimal_dashboard_agent`, which loads no modules, as a minimal Ray
  install does;
- `lean_worker`: the raylet starts its Python workers (every actor of a broker) through
  `lean_worker`: the worker Ray names, without the imports a broker never uses (`lean_imports`),
  an actor's start ~1.0-1.2 s -> ~0.5 s;
- `quiet_log_monitor`: the log monitor looks for new output every 0.5 s instead of 0.1 s.

Each hook checks every Ray function it replaces (its signature: `gate.same_parameters` and
friends) and the gate checks Ray's version; a hook that fails either is not installed, Ray
starts that part as it always did, and one warning names it (`gate.warn_stood_down`).
Measured on this 2-core machine: `ray.init` 6.8 -> 4.3 s, Ray's shutdown 1.5 -> 0.45 s, an
idle `rafka up` 11 -> 9 processes and ~620 -> ~550 MiB PSS, its dashboard agent ~1% -> ~0.1% of
a core.

Kept: the log monitor (actors' log lines reach `rafka up`'s output), the dashboard agent and
the runtime-env agent (the raylet does not run without both).
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from rafka.actors.ray_hooks import (
    gate, lean_imports, lean_worker, minimal_dashboard_agent, quiet_log_monitor, untraced)
from rafka.actors.ray_hooks.gate import has_parameters, leading_parameters, same_parameters

log = logging.getLogger(__name__)

MINIMAL_DASHBOARD_AGENT = "rafka.actors.ray_hooks.minimal_dashboard_agent"
QUIET_LOG_MONITOR = "rafka.actors.ray_hooks.quiet_log_monitor"


@dataclass(frozen=True)
class Replacement:
    """`owner.name` (one of Ray's functions) replaced by `make(original)` while Ray starts,
    if `fits(original)`."""

    owner: Any
    name: str
    fits: Callable[[Any], bool]
    make: Callable[[Any], Any]

    def original(self) -> Any:
        return getattr(self.owner, self.name, None)


def _skip_api_server(self, *, include_dashboard, raise_on_failure) -> None:  # noqa: ANN001 - Ray's Node
    self._webui_url = None


def _skip_monitor(self) -> None:  # noqa: ANN001 - Ray's Node
    return None


def _no_dashboard_dependencies() -> ImportError:
    return ImportError("rafka starts Ray's dashboard agent minimal: it reads no metrics")


def _sets_webui_url(start_api_server: Any) -> bool:
    """Ray's `start_api_server` takes what `_skip_api_server` takes, and sets the one attribute
    of the node (`_webui_url`) that `_skip_api_server` sets in its place."""
    return same_parameters(start_api_server, _skip_api_server) and \
        "_webui_url" in getattr(getattr(start_api_server, "__code__", None), "co_names", ())


def _agent_without_modules(build: Callable[..., list[str]], agent: str) -> Callable[..., list[str]]:
    """Ray's builder of its Python services' commands, with the dashboard agent's (`agent`: Ray's
    name for that component) run through `minimal_dashboard_agent`; left as Ray builds it when
    that is not a plain `python -u`, as under Ray's memory profiler."""
    def build_command(component: str, *args, **kwargs) -> list[str]:  # noqa: ANN002, ANN003 - Ray's
        command = build(component, *args, **kwargs)
        if component == agent and command == [sys.executable, "-u"]:
            return [*command, "-m", MINIMAL_DASHBOARD_AGENT]
        return command
    return build_command


def _lean_workers(start_raylet: Callable[..., Any]) -> Callable[..., Any]:
    """Ray's `start_raylet`, with the raylet told to start its Python workers through a
    `lean_worker` script that runs the very `default_worker.py` Ray passed (written into the
    session directory Ray passed); any other worker path is left as given, and so is Ray's own
    when the script cannot be written."""
    signature = inspect.signature(start_raylet)

    def start(*args, **kwargs) -> Any:  # noqa: ANN002, ANN003 - Ray's
        bound = signature.bind(*args, **kwargs)
        path, session_dir = bound.arguments.get("worker_path"), bound.arguments.get("session_dir")
        if isinstance(path, str) and os.path.basename(path) == "default_worker.py" and isinstance(session_dir, str):
            try:
                bound.arguments["worker_path"] = lean_worker.write_script(path, session_dir)
            except OSError as e:
                log.warning("Ray's workers start as Ray starts them: cannot write %s in %s: %s",
                            lean_worker.SCRIPT_NAME, session_dir, e)
        return start_raylet(*bound.args, **bound.kwargs)
    return start


def _quiet_log_monitor(start_ray_process: Callable[..., Any], log_monitor: str) -> Callable[..., Any]:
    """Ray's `start_ray_process`, with the log monitor's command (`log_monitor`: Ray's name for
    that component) run through `quiet_log_monitor` when it is a plain `python -u
    log_monitor.py ...`; every other process as given."""
    def start(command: list[str], process_type: str, *args, **kwargs) -> Any:  # noqa: ANN002, ANN003 - Ray's
        if process_type == log_monitor and len(command) >= 3 and command[:2] == [sys.executable, "-u"] \
                and os.path.basename(command[2]) == "log_monitor.py":
            command = [sys.executable, "-u", "-m", QUIET_LOG_MONITOR, *command[2:]]
        return start_ray_process(command, process_type, *args, **kwargs)
    return start


def node_hooks() -> dict[str, list[Replacement]]:
    """The hooks `broker_services_only` installs, by name, each as the Ray functions it
    replaces; empty when Ray's modules themselves are not where Ray 2.60 has them."""
    try:
        from ray._private import node as ray_node
        from ray._private import ray_constants
        from ray._private import services as ray_process_commands
        from ray._private import utils as ray_utils
    except ImportError:
        return {}
    agent = getattr(ray_constants, "PROCESS_TYPE_DASHBOARD_AGENT", None)
    monitor = getattr(ray_constants, "PROCESS_TYPE_LOG_MONITOR", None)
    return {
        "no_api_server": [Replacement(ray_node.Node, "start_api_server", _sets_webui_url,
                                      lambda _original: _skip_api_server)],
        "no_autoscaler_monitor": [Replacement(ray_node.Node, "start_monitor",
                                              lambda original: same_parameters(original, _skip_monitor),
                                              lambda _original: _skip_monitor)],
        "minimal_dashboard_agent": [
            Replacement(ray_utils, "get_dashboard_dependency_error",
                        lambda original: same_parameters(original, _no_dashboard_dependencies)
                        and minimal_dashboard_agent.fits(),
                        lambda _original: _no_dashboard_dependencies),
            Replacement(ray_process_commands, "_build_python_executable_command_memory_profileable",
                        lambda original: isinstance(agent, str) and leading_parameters(original, "component"),
                        lambda build: _agent_without_modules(build, agent))],
        "lean_worker": [Replacement(ray_process_commands, "start_raylet",
                                    lambda original: has_parameters(original, "worker_path", "session_dir"),
                                    _lean_workers)],
        "quiet_log_monitor": [Replacement(
            ray_process_commands, "start_ray_process",
            lambda original: isinstance(monitor, str) and leading_parameters(original, "command", "process_type")
            and quiet_log_monitor.fits(),
            lambda start: _quiet_log_monitor(start, monitor))],
    }


def _fits(replacements: list[Replacement]) -> bool:
    return all(r.fits(r.original()) for r in replacements)


def hook_checks(hooks: dict[str, list[Replacement]]) -> dict[str, Callable[[], bool]]:
    """Every hook of `gate.HOOKS` with its own check of Ray's internals: those of `hooks` here,
    and those that act in other processes (checked here too, so that one warning names them);
    a hook missing from `hooks` (Ray's modules moved) does not fit."""
    checks: dict[str, Callable[[], bool]] = {name: functools.partial(_fits, replacements)
                                             for name, replacements in hooks.items()}
    checks.update(lean_imports=lean_imports.fits, untraced=untraced.fits)
    return {name: checks.get(name, lambda: False) for name in gate.HOOKS}


@contextlib.contextmanager
def broker_services_only() -> Iterator[list[str]]:
    """While a private Ray starts in this process: no API server, no autoscaler monitor, a
    minimal dashboard agent without modules, lean workers, a quieter log monitor, each where
    it fits this Ray (`gate`). Logs one warning naming every hook of `gate.HOOKS` that stands
    down, those of other processes included, and yields their names (empty: all in place)."""
    hooks = node_hooks()
    fallen = gate.stood_down(hook_checks(hooks))
    gate.warn_stood_down(fallen)
    installed = [r for name, replacements in hooks.items() if name not in fallen for r in replacements]
    originals = [(r, r.original()) for r in installed]
    for replacement, original in originals:
        setattr(replacement.owner, replacement.name, replacement.make(original))
    try:
        yield fallen
    finally:
        for replacement, original in originals:
            setattr(replacement.owner, replacement.name, original)
