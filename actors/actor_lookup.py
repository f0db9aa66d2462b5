"""Finding a rafka actor by name, where a dead, dying or half-registered actor counts as absent.

`ray.get_actor` raises more than the `ValueError` it documents. Looked up in the moment
after its death (a broker killed with kill -9, say), a named actor can still be listed by the
GCS while the class it was created from is already gone from the GCS's function table:
building the handle then fails inside Ray's class loading (Ray 2.60:
`FunctionActorManager._load_actor_class_from_gcs` -> `ensure_str(None)` raises
AssertionError "Expected str or bytes, got <class 'NoneType'>"). An actor whose death is
already known raises one of `RayActorError`'s kind. For a caller asking "is it there?" all
of these mean "no": `find_actor` answers None for them and logs Ray's own error at DEBUG.
Any other error (Ray not connected, the GCS not answering in time) is not an answer about
the actor, and goes through to the caller.

Every lookup of a rafka actor by name goes through `find_actor` (the CLI, `Cluster`, the
coordinator's supervision, a replica finding its coordinator). Blocking: async callers run it
in a thread (`asyncio.to_thread`).
"""
from __future__ import annotations

import logging
import os
from types import TracebackType
from typing import Any

import ray

log = logging.getLogger(__name__)

# Ray's module that builds an actor handle's class from the GCS; an error raised inside it
# while looking an actor up means the actor's registration is half gone.
_CLASS_LOADING_MODULE = os.path.join("ray", "_private", "function_manager.py")


def find_actor(name: str, namespace: str) -> Any | None:
    """The handle of the live actor named `name` in `namespace`, or None when Ray has none:
    never registered, dead, dying, or half-registered (see the module's docstring). Other
    errors are raised. A handle returned may still belong to an actor that dies a moment
    later; calls on it then raise `RayActorError`, as for any handle."""
    try:
        return ray.get_actor(name, namespace=namespace)
    except Exception as e:  # noqa: BLE001 - sorted below: absent, or raised as it is
        if not is_absent_actor_error(e):
            raise
        log.debug("actor %s (namespace %s) taken as absent: Ray raised %s: %s", name, namespace,
                  type(e).__name__, e)
        return None


def is_absent_actor_error(error: BaseException) -> bool:
    """Whether `error`, raised by looking up an actor by name (or by a call on the handle),
    says that the actor does not live: no such name (`ValueError`, which Ray's
    `ActorHandleNotFoundError` is too), an actor known dead or unreachable for good
    (`RayActorError`: `ActorDiedError`, `ActorUnavailableError`), or any error raised inside
    Ray's loading of the actor's class (a registration half gone)."""
    if isinstance(error, (ValueError, ray.exceptions.RayActorError)):
        return True
    return _raised_in_class_loading(error.__traceback__)


def _raised_in_class_loading(tb: TracebackType | None) -> bool:
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.endswith(_CLASS_LOADING_MODULE):
            return True
        tb = tb.tb_next
    return False


def named_actor_alive(name: str, namespace: str, timeout_s: float = 1.0) -> bool:
    """Whether the named actor exists and is not dead. One that exists but does not answer
    within `timeout_s` (busy) counts as alive: only a dead process proves anything. A dead
    actor's name can outlive it (for a moment, or while its owner holds a handle), and the
    handle taken here is dropped before returning, so it does not hold the name itself."""
    actor = find_actor(name, namespace)
    if actor is None:
        return False
    try:
        ray.get(actor.__ray_ready__.remote(), timeout=timeout_s)
    except ray.exceptions.GetTimeoutError:
        return True
    except Exception as e:  # noqa: BLE001 - sorted below: dead, or raised as it is
        if not is_absent_actor_error(e):
            raise
        return False
    return True
