"""Starting and stopping brokers as Ray actors: the programmatic cluster API under the facade.

A broker is one `BrokerCoordinator` actor; it starts its own front end and replicas. The
coordinator is named `coordinator:<id>` in the cluster's namespace, so any process in the
Ray cluster can find it.
"""
from __future__ import annotations

import logging
from typing import Any

import ray

from rafka.actors.naming import coordinator_name
from rafka.actors.ray_env import current_node_id, pin_to_node
from rafka.common.config import BrokerConfig
from rafka.common.errors import StartupError

log = logging.getLogger(__name__)


def start_broker(config: BrokerConfig, namespace: str, node_id: str | None = None,
                 stale_registration_wait_s: float = 0.0, timeout_s: float = 120.0) -> tuple[Any, dict]:
    """Start one broker and wait until it serves; StartupError with the broker's own reason."""
    from rafka.coordinator.coordinator_actor import BrokerCoordinator

    node = node_id or current_node_id()
    actor = ray.remote(BrokerCoordinator).options(
        name=coordinator_name(config.broker_id), namespace=namespace, num_cpus=0, max_concurrency=1000,
        max_restarts=0, **pin_to_node(node)).remote(config, namespace, node, stale_registration_wait_s)
    try:
        info = ray.get(actor.start.remote(), timeout=timeout_s)
    except ray.exceptions.RayTaskError as e:
        ray.kill(actor)
        cause = e.cause if hasattr(e, "cause") else e
        if isinstance(cause, StartupError):
            raise StartupError(str(cause)) from None
        raise StartupError(f"broker {config.broker_id} failed to start: {cause}") from None
    except ray.exceptions.GetTimeoutError:
        ray.kill(actor)
        raise StartupError(f"broker {config.broker_id} did not start within {timeout_s:.0f} s") from None
    return actor, info


def stop_broker(actor: Any, timeout_s: float = 60.0) -> None:
    """Clean stop: replicas flush and mark their logs clean, the ZooKeeper session closes."""
    try:
        ray.get(actor.shutdown.remote(), timeout=timeout_s)
    except Exception as e:  # noqa: BLE001 - a dead broker is already stopped
        log.warning("broker did not shut down cleanly: %s", e)
    ray.kill(actor)
