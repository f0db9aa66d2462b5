"""Control-plane calls bounded in time: a hung or failing actor delays no one past the bound,
and its failure is logged. Stand-in actors (coroutines), no Ray."""
from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from rafka.coordinator.broker import control_calls
from rafka.coordinator.broker.control_calls import bounded, fan_out_metadata, report_failures

log = logging.getLogger("test.control_calls")


async def _hang() -> None:
    await asyncio.Event().wait()


async def _answer(value: Any) -> Any:
    return value


async def _fail() -> None:
    raise RuntimeError("actor died")


def test_bounded_returns_the_answer() -> None:
    assert asyncio.run(bounded(_answer(7), 1.0, "the front end's pid", log)) == 7


def test_bounded_gives_up_on_a_hung_call_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(asyncio.TimeoutError):
            await bounded(_hang(), 0.05, "the front end's update_metadata", log)
        return loop.time() - started
    assert asyncio.run(main()) < 1.0
    assert "the front end's update_metadata got no answer within 0 s" in caplog.text


def test_bounded_logs_and_raises_a_failed_call(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(RuntimeError, match="actor died"):
        asyncio.run(bounded(_fail(), 1.0, "the front end's update_replicas", log))
    assert "the front end's update_replicas failed: RuntimeError('actor died')" in caplog.text


def test_report_failures_names_each_failed_target(caplog: pytest.LogCaptureFixture) -> None:
    failed = report_failures([None, asyncio.TimeoutError(), RuntimeError("gone")], ["broker 0", "broker 1", "broker 2"],
                             "controller epoch 3's UpdateMetadata", log)
    assert failed == ["broker 1", "broker 2"]
    assert "controller epoch 3's UpdateMetadata to broker 1 failed: no answer in time" in caplog.text
    assert "controller epoch 3's UpdateMetadata to broker 2 failed: RuntimeError('gone')" in caplog.text


class Coordinator:
    """A broker's coordinator as the controller calls it: each method's `.remote` returns an
    awaitable; `hung` names the methods that never answer."""

    def __init__(self, hung: tuple[str, ...] = ()) -> None:
        self.calls: list[str] = []
        for method in ("apply_metadata", "publish_metadata", "settle_metadata"):
            setattr(self, method, SimpleNamespace(remote=self._method(method, method in hung)))

    def _method(self, name: str, hangs: bool):
        def remote(*_: Any) -> Any:
            self.calls.append(name)
            return _hang() if hangs else _answer("NONE")
        return remote


def test_a_hung_broker_delays_no_other_broker_past_the_bound(monkeypatch: pytest.MonkeyPatch,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    """A broker whose coordinator never answers (its front end hung, say): every other broker
    still gets LeaderAndIsr, UpdateMetadata and settle, within the call bound, and the hung
    one is named in the log."""
    monkeypatch.setattr(control_calls, "CONTROL_CALL_TIMEOUT_S", 0.2)
    monkeypatch.setattr(control_calls, "LEADER_AND_ISR_WAIT_S", 0.1)
    hung = Coordinator(hung=("apply_metadata", "publish_metadata", "settle_metadata"))
    live = [Coordinator(), Coordinator()]

    async def main() -> float:
        loop = asyncio.get_running_loop()
        started = loop.time()
        await fan_out_metadata({"broker 0": hung, "broker 1": live[0], "broker 2": live[1]},
                               SimpleNamespace(controller_epoch=5), log)
        took = loop.time() - started
        await asyncio.sleep(0.25)   # (the LeaderAndIsr order runs out on its own, after the fan-out)
        return took
    took = asyncio.run(main())
    assert took < 1.0   # two bounded steps of 0.2 s and the 0.1 s wait, not for ever
    assert all(c.calls == ["apply_metadata", "publish_metadata", "settle_metadata"] for c in live)
    for step in ("LeaderAndIsr", "UpdateMetadata", "settle"):
        assert f"controller epoch 5's {step} to broker 0 failed: no answer in time" in caplog.text
    assert "broker 1" not in caplog.text and "broker 2" not in caplog.text
