"""Starting and stopping the long-lived actors of a broker: the programmatic cluster API's base.

A service actor (a broker's `BrokerCoordinator`) is created under a name in the cluster's
namespace, pinned to a node, and is not restarted by Ray (its owner decides). `start_service`
waits for its `start()` and turns a failure into a `StartupError` carrying the actor's own
reason; `stop_service` asks for a clean `shutdown()` and kills it; `kill_processes` is
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
    except ray.exceptions.RayTaskError as e:
        ray.kill(actor)
        cause = e.cause if hasattr(e, "cause") else e
        if isinstance(cause, StartupError):
            raise StartupError(str(cause)) from None
        raise StartupError(f"{label} failed to start: {cause}") from None
    except ray.exceptions.GetTimeoutError:
        ray.kill(actor)
        raise StartupError(f"{label} did not start within {timeout_s:.0f} s") from None
    return actor, info


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
