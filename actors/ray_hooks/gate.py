"""The one gate of rafka's hooks into Ray's internals: the Ray they were written for, and which stand down.

Every hook in this package replaces or edits a private part of Ray for a measured saving (the
modules' docstrings give the figures); Ray makes no promise about any of it. They were written
for Ray 2.60 (`RAY_WRITTEN_FOR`), the version pyproject.toml pins (`ray[default]==2.60.*`).
Two checks stand between a hook and Ray, and a hook that fails either leaves Ray as it is:

- `supported_ray`, the one version check: with any other Ray every hook stands down;
- the hook's own check of each Ray function, attribute or script it replaces, first
  (`same_parameters`, `leading_parameters`, `has_parameters` for signatures): a 2.60.x whose
  internals moved is caught there.

A private Ray's start (`services.broker_services_only`) runs both checks for every hook in
`HOOKS`, also for those that act in other processes (the workers' lean imports, the actors'
untraced methods, which check again where they run), and logs ONE warning naming each that
stood down (`stood_down_warning`). The broker then runs on Ray's own behaviour: slower to start
an actor and heavier, not wrong.

Why `ray[default]` and not `ray`: the raylet of every Ray node runs two Python agents and does
not run without both: the runtime-env agent, whose aiohttp the plain `ray` wheel carries itself
(`ray/_private/runtime_env/agent/thirdparty_files`), and the dashboard agent, which without
`ray[default]`'s packages (aiohttp, grpcio, opencensus, prometheus_client, ...) runs `--minimal`,
as rafka's private Ray runs it anyway (`minimal_dashboard_agent`). Checked with plain `ray`
2.60.0: `ray.init` starts both agents and an actor answers. So a broker on its private Ray would
run on plain `ray`; the extra is for the Rays rafka does not shape: a Ray that a user runs and
rafka joins (its dashboard agent with its modules, the API server behind `ray list` and job
submission), Ray-on-Spark (`spark_bridge.ray_on_spark`; Ray's `setup_ray_cluster` warns without
the dashboard's dependencies), and rafka's own Ray when every hook stands down (its agent then
starts as Ray decides). Declaring `ray[default]` keeps one install for all of them.
"""
from __future__ import annotations

import inspect
import logging
from typing import Any, Callable, Iterable, Mapping

log = logging.getLogger(__name__)

# The Ray release the hooks were written for and checked against (its major.minor).
RAY_WRITTEN_FOR = "2.60"

# Every hook, by the name the warning gives it (the module or function that holds it).
HOOKS = ("no_api_server", "no_autoscaler_monitor", "minimal_dashboard_agent", "lean_worker", "quiet_log_monitor",
         "lean_imports", "untraced")


def ray_version() -> str:
    """The version string of the Ray this process imports (importing it)."""
    import ray

    return str(ray.__version__)


def supported_ray() -> bool:
    """Whether this process's Ray is the release the hooks were written for: the gate's one version check."""
    version = ray_version()
    return version == RAY_WRITTEN_FOR or version.startswith(RAY_WRITTEN_FOR + ".")


def stood_down(checks: Mapping[str, Callable[[], bool]]) -> list[str]:
    """The hooks of `checks` (name -> its own check of Ray's internals) that stand down: all of
    them when this Ray is not the supported one, else each whose check fails or raises."""
    if not supported_ray():
        return list(checks)
    return [name for name, fits in checks.items() if not _passes(name, fits)]


def _passes(name: str, fits: Callable[[], bool]) -> bool:
    try:
        return bool(fits())
    except Exception:  # noqa: BLE001 - a check that cannot even look means the hook does not fit
        log.debug("the check of Ray hook %s raised", name, exc_info=True)
        return False


def stood_down_warning(names: Iterable[str]) -> str | None:
    """The one warning naming the hooks that stand down, or None when none does."""
    names = list(names)
    if not names:
        return None
    version = ray_version()
    if supported_ray():
        why = f"Ray {version}'s internals differ from what these hooks were written for"
    else:
        why = f"Ray {version} is not the {RAY_WRITTEN_FOR} these hooks were written for"
    return f"{why}; using Ray's own: {', '.join(names)} (rafka runs as before, slower to start actors)"


def warn_stood_down(names: Iterable[str]) -> None:
    """Log `stood_down_warning` once, at WARNING, if any hook stands down."""
    message = stood_down_warning(names)
    if message is not None:
        log.warning("%s", message)


# -- signature checks: each hook's replacement must take what Ray passes the original ------------

def _shape(function: Callable[..., Any]) -> list[tuple[str, Any]]:
    return [(p.name, p.kind) for p in inspect.signature(function).parameters.values()]


def same_parameters(original: Callable[..., Any], replacement: Callable[..., Any]) -> bool:
    """Whether `original` takes the parameters (names and kinds) `replacement` takes: a
    replacement that does not call the original must accept every call made to it."""
    return callable(original) and _shape(original) == _shape(replacement)


def leading_parameters(original: Callable[..., Any], *names: str) -> bool:
    """Whether `original`'s first parameters are `names`, positional or keyword: what a wrapper
    that names them and passes the rest on (`*args, **kwargs`) relies on."""
    if not callable(original):
        return False
    shape = _shape(original)[:len(names)]
    return [name for name, _ in shape] == list(names) and \
        all(kind == inspect.Parameter.POSITIONAL_OR_KEYWORD for _, kind in shape)


def has_parameters(original: Callable[..., Any], *names: str) -> bool:
    """Whether `original` takes each of `names` by name: what a wrapper that binds the call to
    Ray's signature and reads or changes those arguments relies on."""
    if not callable(original):
        return False
    parameters = inspect.signature(original).parameters
    return all(name in parameters and parameters[name].kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY) for name in names)
