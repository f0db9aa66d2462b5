"""Starting and stopping the long-lived actors of a broker: the programmatic cluster API's base.

A service actor (a broker's `BrokerCoordinator`) is created under a name in the cluster's
namespace, pinned to a node, and is not restarted by Ray (its owner decides). `start_service`
waits for its `start()` and turns a failure into a `StartupError` carrying the actor's own
reason; `stop_service` asks for a clean `shutdown()` and kills it. This module knows no
actor class of rafka's: the caller passes it (ARCHITECTURE.md, "Who imports whom").
"""
from __future__ import annotations

import logging
from typing import Any

import ray

from rafka.actors.ray_env import current_node_id, pin_to_node
from rafka.common.errors import StartupError

log = logging.getLogger(__name__)


def start_service(actor_class: type, name: str, namespace: str, *args: Any, node_id: str | None = None,
                  label: str = "", timeout_s: float = 120.0) -> tuple[Any, dict]:
    """Create `actor_class(*args)` as the named actor `name` on `node_id` (this node by
    default), call its `start()` and return (handle, what start returned). StartupError with
    the actor's own reason, after killing it, when it fails or does not start in time."""
    label = label or name
    actor = ray.remote(actor_class).options(
        name=name, namespace=namespace, num_cpus=0, max_concurrency=1000,
        max_restarts=0, **pin_to_node(node_id or current_node_id())).remote(*args)
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
