"""RestReadiness: a replica is idle for resting only when quiet and with no append inside the
clients' retry horizon (issue 56), whoever asks (the dormancy timer or the live cap)."""
from __future__ import annotations

import asyncio

import pytest

from rafka.common.config import BrokerConfig
from rafka.coordinator.broker.live_cap import LiveReplicaCap, Relief
from rafka.partition_worker.rest_horizon import DEFAULT_RETRY_HORIZON_MS, RestReadiness

MIN_IDLE_TO_MAKE_ROOM_MS = 250   # what the broker asks of a replica it rests to make room


def test_the_default_horizon_is_kafkas_request_timeout_plus_retry_backoff():
    assert DEFAULT_RETRY_HORIZON_MS == 30_000 + 100
    assert BrokerConfig.from_mapping({}).replica_dormant_retry_horizon_ms == DEFAULT_RETRY_HORIZON_MS
    config = BrokerConfig.from_mapping({"replica.dormant.retry.horizon.ms": "5000"})
    assert config.log_config().replica_dormant_retry_horizon_ms == 5000


def test_a_replica_that_never_appended_is_idle_since_its_last_write():
    r = RestReadiness(now_s=100.0)
    assert r.idle_for_ms(101.5, quiet=True) == 1500.0
    assert r.idle_for_ms(101.5, quiet=False) == 0.0
    r.wrote(101.0)
    assert r.idle_for_ms(101.5, quiet=True) == 500.0


def test_an_append_keeps_a_quiet_replica_busy_for_the_whole_retry_horizon():
    r = RestReadiness(now_s=0.0)
    r.appended(10.0)
    for later_s in (0.25, 1.0, 5.0, 30.0, 30.099):
        assert r.within_retry_horizon(10.0 + later_s)
        for quiet in (True, False):   # minus the time left in the horizon, quiet or not
            assert r.idle_for_ms(10.0 + later_s, quiet=quiet) == pytest.approx(-(30_100 - later_s * 1000)), later_s
    assert not r.within_retry_horizon(40.1)
    assert r.idle_for_ms(40.1, quiet=True) == 30_100.0   # then idle since the append, as before
    assert r.idle_for_ms(40.1, quiet=False) == 0.0


def test_a_write_after_the_horizon_restarts_only_the_idle_time():
    r = RestReadiness(now_s=0.0, retry_horizon_ms=1000)
    r.appended(1.0)
    r.wrote(5.0)          # a role change, say: not an append
    assert r.idle_for_ms(5.5, quiet=True) == 500.0
    r.appended(6.0)
    assert r.idle_for_ms(6.9, quiet=True) == pytest.approx(-100.0)


def test_a_zero_horizon_is_the_old_rule():
    r = RestReadiness(now_s=0.0, retry_horizon_ms=0)
    r.appended(1.0)
    assert r.idle_for_ms(1.3, quiet=True) == pytest.approx(300.0)


def test_at_the_cap_a_replica_that_just_appended_is_not_rested_and_the_wake_goes_over():
    """replica.max.live.processes=2: one replica appended 1 s ago (quiet, idle well past the
    250 ms a room-making round asks for), one is busy. A wake waits, nothing is rested, and it
    goes over the cap; once the horizon has passed, that replica is rested, and the one woken
    meanwhile, written again, is not."""
    clock = {"now": 1000.0}
    replicas = {"appended": RestReadiness(0.0), "busy": RestReadiness(0.0)}
    replicas["appended"].appended(999.0)
    quiet = {"appended": True, "busy": False}
    rested: list[str] = []

    async def make_room(count: int) -> Relief:
        chosen = [name for name, r in replicas.items()
                  if r.idle_for_ms(clock["now"], quiet[name]) >= MIN_IDLE_TO_MAKE_ROOM_MS][:count]
        for name in chosen:
            del replicas[name]
            rested.append(name)
        return Relief(len(chosen))

    async def wake(cap: LiveReplicaCap, name: str) -> None:
        async with cap.turn():
            replicas[name] = RestReadiness(clock["now"])
            replicas[name].appended(clock["now"])
            quiet[name] = True

    async def scenario() -> LiveReplicaCap:
        cap = LiveReplicaCap(2, lambda: len(replicas), make_room, wait_s=0.2, retry_after_s=0.02)
        await wake(cap, "x")
        assert rested == [] and cap.over_cap == 1 and len(replicas) == 3
        clock["now"] = 999.0 + DEFAULT_RETRY_HORIZON_MS / 1000 + 1    # past the horizon of "appended"
        replicas["x"].appended(clock["now"])                         # x is being written
        await wake(cap, "y")
        return cap
    cap = asyncio.run(scenario())
    assert rested == ["appended"] and cap.over_cap == 2
    assert set(replicas) == {"busy", "x", "y"}


def test_a_replica_opened_for_a_write_is_held_for_the_horizon_from_its_open():
    """A write that waited for the wake past its request's time was withdrawn; its producer
    retries within the horizon, so the replica woken for it is not rested before."""
    r = RestReadiness(now_s=50.0, retry_horizon_ms=1000, held_from_open=True)
    assert r.within_retry_horizon(50.9) and r.idle_for_ms(50.9, quiet=True) == pytest.approx(-100.0)
    assert r.idle_for_ms(51.5, quiet=True) == pytest.approx(1500.0)
