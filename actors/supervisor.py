"""Starting and stopping the long-lived actors of a broker: the programmatic cluster API's base.

A service actor (a broker's `BrokerCoordinator`) is created under a name in the cluster's
namespace, pinned to a node, and is not restarted by Ray (its owner decides). `start_service`
waits for its `start()` and turns a failure into a `StartupError` carrying the actor's own
reason (`run_on_node` does the same for a task that must run on the node before the actor
exists); `stop_service` asks for a clean `shutdown()` and kills it; `kill_processes` is
kill -9 of a service's processes, for fault drills (`rafka broker stop --kill`). This module knows no
actor class of rafka's: the caller passes it (ARCHITECTURE.md, "Who imports whom").
"""
from __future__ import annotations

import logging
import os
import signal
import time
from typing import Any

import ray

from rafka.actors.ray_env import current_node_id, pin_to_node
from rafka.common.errors import StartupError

log = logging.getLogger(__name__)


def start_service(actor_class: type, name: str, namespace: str, *args: Any, node_id: str | None = None,
                  label: str = "", timeout_s: float = 120.0, detached: bool = False) -> tuple[Any, dict]:
    """Create `actor_class(*args)` as the named actor `name` on `node_id` (this node by
    default), call its `start()` and return (handle, what start returned). StartupError with
    the actor's own reason, after killing it, when it fails or does not start in time.
    `detached`: the actor outlives the driver that created it (a CLI command that starts a
    broker and exits)."""
    label = label or name
    lifetime = {"lifetime": "detached"} if detached else {}
    actor = ray.remote(actor_class).options(
        name=name, namespace=namespace, num_cpus=0, max_concurrency=1000,
        max_restarts=0, **lifetime, **pin_to_node(node_id or current_node_id())).remote(*args)
    try:
        info = ray.get(actor.start.remote(), timeout=timeout_s)
    except (ray.exceptions.RayTaskError, ray.exceptions.GetTimeoutError) as e:
        ray.kill(actor)
        raise _startup_error(e, label, timeout_s) from None
    return actor, info


def run_on_node(function: Any, *args: Any, node_id: str | None = None, label: str = "",
                timeout_s: float = 60.0) -> Any:
    """`function(*args)` as a Ray task on `node_id` (this node by default): a step of starting
    a service that needs that node's disks before any of its actors exist. StartupError with
    the task's own reason when it fails or does not finish in time; never retried."""
    task = ray.remote(num_cpus=0, max_retries=0)(function)
    ref = task.options(**pin_to_node(node_id or current_node_id())).remote(*args)
    try:
        return ray.get(ref, timeout=timeout_s)
    except (ray.exceptions.RayTaskError, ray.exceptions.GetTimeoutError) as e:
        ray.cancel(ref, force=True)
        raise _startup_error(e, label or getattr(function, "__name__", "task"), timeout_s) from None


def _startup_error(e: Exception, label: str, timeout_s: float) -> StartupError:
    """A failed or late start as a StartupError: the actor's or task's own StartupError as it is."""
    if isinstance(e, ray.exceptions.GetTimeoutError):
        return StartupError(f"{label} did not start within {timeout_s:.0f} s")
    cause = e.cause if hasattr(e, "cause") else e
    if isinstance(cause, StartupError):
        return StartupError(str(cause))
    return StartupError(f"{label} failed to start: {cause}")


def stop_service(actor: Any, timeout_s: float = 60.0) -> None:
    """Clean stop (`shutdown()`), then kill; a dead actor is already stopped."""
    try:
        ray.get(actor.shutdown.remote(), timeout=timeout_s)
    except Exception as e:  # noqa: BLE001 - a dead broker is already stopped
        log.warning("%s did not shut down cleanly: %s", actor, e)
    ray.kill(actor)


def kill_processes(pids: dict[str, int], namespace: str, node_id: str, timeout_s: float = 30.0) -> None:
    """kill -9 of named actors' processes (`pids`: actor name -> pid, on `node_id`), all at
    once as a machine losing power would, then wait until Ray has released every name (so a
    restart can create them again). Off this node the pids mean nothing here: Ray kills the
    actors instead, which is as abrupt (no shutdown code runs)."""
    if node_id == current_node_id():
        for pid in pids.values():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    else:
        for name in pids:
            try:
                ray.kill(ray.get_actor(name, namespace=namespace), no_restart=True)
            except ValueError:
                pass
    deadline = time.monotonic() + timeout_s
    alive = set(pids)
    while alive:
        alive = {name for name in alive if named_actor_alive(name, namespace)}
        if alive and time.monotonic() > deadline:
            raise TimeoutError(f"actors still alive {timeout_s:.0f} s after kill -9: {sorted(alive)}")
        if alive:
            time.sleep(0.1)


def named_actor_alive(name: str, namespace: str, timeout_s: float = 1.0) -> bool:
    """Whether the named actor exists and is not dead. One that exists but does not answer
    within `timeout_s` (busy) counts as alive: only a dead process proves anything. A dead
    actor's name can outlive it (for a moment, or while its owner holds a handle), and the
    handle taken here is dropped before returning, so it does not hold the name itself."""
    try:
        actor = ray.get_actor(name, namespace=namespace)
    except ValueError:
        return False
    try:
        ray.get(actor.__ray_ready__.remote(), timeout=timeout_s)
    except ray.exceptions.GetTimeoutError:
        return True
    except ray.exceptions.RayActorError:
        return False
    return True
