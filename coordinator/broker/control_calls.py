"""Control-plane actor calls bounded in time, and their failures said out loud.

ARCHITECTURE promises that every control-plane call has a timeout: a call to a hung or
dying actor (a front end under heavy load, a broker killed mid-call) must not hold its
caller, least of all while it holds a lock that every later publication needs. `bounded`
awaits one call within its bound and logs a call that fails or runs out (a WARNING naming
what was asked of whom), then raises as the call did; `report_failures` logs the failures
of a fan-out whose callers go on without them (the controller's LeaderAndIsr,
UpdateMetadata and settle orders: `fan_out_metadata`), which were silent before.

Pure asyncio: the caller hands in the awaitable (a Ray ObjectRef is one).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Iterable, TypeVar

T = TypeVar("T")

FRONTEND_CALL_TIMEOUT_S = 30.0   # a broker's own front end: ~2 ms idle, seconds at a load of 40 on 2 cores
CONTROL_CALL_TIMEOUT_S = 60.0    # a metadata push to another broker's coordinator
LEADER_AND_ISR_WAIT_S = 10.0     # how long the controller waits for the brokers' LeaderAndIsr to be done


async def bounded(call: Awaitable[T], timeout_s: float, what: str, log: logging.Logger | logging.LoggerAdapter) -> T:
    """The result of `call` within `timeout_s`; asyncio.TimeoutError (the call abandoned) or
    the call's own error otherwise, either logged at WARNING with `what`."""
    try:
        return await asyncio.wait_for(call, timeout_s)
    except asyncio.TimeoutError:
        log.warning("%s got no answer within %.0f s", what, timeout_s)
        raise
    except Exception as e:
        log.warning("%s failed: %r", what, e)
        raise


def report_failures(outcomes: Iterable[Any], targets: Iterable[str], what: str,
                    log: logging.Logger | logging.LoggerAdapter) -> list[str]:
    """Log each exception among `outcomes` (from `asyncio.gather(..., return_exceptions=True)`,
    in the order of `targets`) as `what` to that target failing; returns the targets that failed."""
    failed = []
    for target, outcome in zip(targets, outcomes):
        if isinstance(outcome, BaseException):
            reason = "no answer in time" if isinstance(outcome, asyncio.TimeoutError) else repr(outcome)
            log.warning("%s to %s failed: %s", what, target, reason)
            failed.append(target)
    return failed


async def fan_out_metadata(coordinators: dict[str, Any], metadata: Any,
                           log: logging.Logger | logging.LoggerAdapter) -> None:
    """The controller's orders for `metadata` to every live broker's coordinator (by name):
    LeaderAndIsr (`apply_metadata`), then UpdateMetadata at once (`publish_metadata`) without
    waiting for the replicas to start (Kafka's order, where acting on LeaderAndIsr is quick),
    then, once every broker has acted on LeaderAndIsr or `LEADER_AND_ISR_WAIT_S` has passed,
    "settled" (`settle_metadata`: CreateTopics and its kin answer then). Each call is bounded
    by `CONTROL_CALL_TIMEOUT_S`; a broker that fails or is late is logged, not waited for
    again (the next round tells it again)."""
    names, targets = list(coordinators), list(coordinators.values())
    what = f"controller epoch {metadata.controller_epoch}'s"
    orders = [asyncio.ensure_future(asyncio.wait_for(t.apply_metadata.remote(metadata, False), CONTROL_CALL_TIMEOUT_S))
              for t in targets]
    for name, order in zip(names, orders):
        order.add_done_callback(
            lambda f, name=name: f.cancelled() or report_failures([f.exception()], [name], f"{what} LeaderAndIsr", log))
    published = await asyncio.gather(*[asyncio.wait_for(t.publish_metadata.remote(metadata), CONTROL_CALL_TIMEOUT_S)
                                       for t in targets], return_exceptions=True)
    report_failures(published, names, f"{what} UpdateMetadata", log)
    if orders:
        await asyncio.wait(orders, timeout=LEADER_AND_ISR_WAIT_S)
    settled = await asyncio.gather(*[asyncio.wait_for(t.settle_metadata.remote(metadata), CONTROL_CALL_TIMEOUT_S)
                                     for t in targets], return_exceptions=True)
    report_failures(settled, names, f"{what} settle", log)
