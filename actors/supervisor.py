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
from typing import Any, Callable

import ray

from rafka.actors.actor_lookup import find_actor, named_actor_alive
from rafka.actors.ray_env import current_node_id, pin_to_node
from rafka.common.errors import StartupError
from rafka.common.process_tree import signal_processes, start_time, wait_gone

log = logging.getLogger(__name__)


class ProcessesSurvivedError(Exception):
    """kill -9 did not end every process it was sent to (one stuck in the kernel, say)."""


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


def kill_processes(pids: dict[str, int], namespace: str, node_id: str, timeout_s: float = 30.0,
                   name_release_s: float = 10.0) -> None:
    """kill -9 of named actors' processes (`pids`: actor name -> pid, on `node_id`), all at
    once as a machine losing power would. Returns once each is confirmed gone: on this node
    by its pid (that pid with that start time no longer runs; a zombie awaiting its parent
    counts as gone), elsewhere by Ray reporting the actor dead. ProcessesSurvivedError naming
    those still running after `timeout_s`: only then did the kill fail. Then waits up to
    `name_release_s` for Ray to release the names (a restart creates them again); a name
    still held is logged, not raised, since the processes are gone. Off this node the pids
    mean nothing here: Ray kills the actors instead, which is as abrupt (no shutdown code runs)."""
    if node_id == current_node_id():
        processes = {pid: started for pid in pids.values() if (started := start_time(pid)) is not None}
        signal_processes(processes, signal.SIGKILL)
        survivors = wait_gone(processes, timeout_s)
        if survivors:
            names = sorted(name for name, pid in pids.items() if pid in survivors)
            raise ProcessesSurvivedError(f"processes still running {timeout_s:.0f} s after kill -9: "
                                         f"{', '.join(f'{n} (pid {pids[n]})' for n in names)}")
    else:
        for name in pids:
            actor = find_actor(name, namespace)
            if actor is not None:
                ray.kill(actor, no_restart=True)
            del actor
        left = _wait_for(lambda names: {n for n in names if named_actor_alive(n, namespace)}, set(pids), timeout_s)
        if left:
            raise ProcessesSurvivedError(f"actors still alive {timeout_s:.0f} s after kill: {sorted(left)}")
    held = _wait_for(lambda names: {n for n in names if find_actor(n, namespace) is not None}, set(pids),
                     name_release_s)
    if held:
        log.warning("killed, but Ray still holds the names %s after %.1f s", sorted(held), name_release_s)


def _wait_for(still: Callable[[set[str]], set[str]], names: set[str], timeout_s: float) -> set[str]:
    """Poll `still(names)` until it is empty or `timeout_s` passed; returns what is left."""
    deadline = time.monotonic() + timeout_s
    while (names := still(names)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return names
