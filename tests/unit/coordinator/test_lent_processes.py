"""A replica start that finds no spare process ready takes, whichever comes first, a spare
already starting or the process of an idle replica rested for it (`RayReplicaLauncher.borrow`);
a new process of its own only when neither can come; a start that gives up leaves the process
it was handed as a spare. No Ray: the processes are stand-ins that become ready after a delay."""
from __future__ import annotations

import asyncio
import itertools

import pytest

from rafka.coordinator.broker.replica_launcher import LaunchedReplica, RayReplicaLauncher


class Process:
    """A stand-in replica process, ready `start_s` after it was asked for."""

    def __init__(self, name: str, start_s: float) -> None:
        self.name, self._start_s = name, start_s
        self.__ray_ready__ = self

    async def remote(self) -> None:
        await asyncio.sleep(self._start_s)

    def __repr__(self) -> str:
        return self.name


class Machine:
    """A stand-in for the machine's idle CPU (`idle_cpu.py`): idle, or busy."""

    def __init__(self, idle: bool = True) -> None:
        self.idle = idle

    def idle_cores(self) -> float:
        return 2.0 if self.idle else 0.0

    def has_a_core_to_spare(self) -> bool:
        return self.idle


def launcher(borrow, *, spares: int = 0, start_s: float = 0.3, machine: Machine | None = None) -> RayReplicaLauncher:
    made = RayReplicaLauncher(1, ("/nonexistent",), "ns", None, spares=spares)
    made.borrow = borrow
    made.idle_cpu = machine or Machine()
    made.idle_check_s = 0.01
    numbers = itertools.count()
    made._new_process = lambda: Process(f"new-{next(numbers)}", start_s)   # (no Ray here)
    return made


def refilling(spares: int, idle: bool, idle_wait_max_s: float) -> tuple[RayReplicaLauncher, Machine]:
    """A launcher short of `spares` quick-starting spares, refilling ahead of need on a machine
    `idle` or busy, forcing a spare in after `idle_wait_max_s` at most (the rule permitting)."""
    machine = Machine(idle=idle)
    made = launcher(nothing_to_lend, spares=spares, start_s=0.01, machine=machine)
    made.idle_wait_max_s = idle_wait_max_s
    made.refill()
    return made, machine


async def busy_then_idle(made: RayReplicaLauncher, machine: Machine, busy_s: float,
                         idle_s: float) -> tuple[tuple[int, int], int]:
    """The spares ready and starting after `busy_s` more on the busy machine, and the spares
    ready once it then was idle for `idle_s`."""
    await asyncio.sleep(busy_s)
    waiting = made.spares, len(made._creating)
    machine.idle = True
    await asyncio.sleep(idle_s)
    return waiting, made.spares


def rested(process: str) -> LaunchedReplica:
    return LaunchedReplica(process, "sock", "/nonexistent", 1)


async def nothing_to_lend() -> bool:
    return False


def test_the_start_takes_the_process_of_the_replica_rested_for_it_without_waiting_for_the_rest_to_finish():
    async def main():
        async def borrow():
            made.release(rested("idle"))     # the rest has closed the replica: its process is free
            await asyncio.sleep(0.5)         # ... and goes on to publish the dormant partition
            return True
        made = launcher(borrow)
        started = asyncio.get_running_loop().time()
        process = await made._process_without_spare()
        return process, asyncio.get_running_loop().time() - started
    process, took_s = run(main())
    assert process == "idle" and took_s < 0.2


def test_with_nothing_to_lend_the_start_takes_the_first_spare_that_was_already_starting():
    async def main():
        made = launcher(nothing_to_lend, spares=1, start_s=0.2)
        made.refill()                                # one spare on its way (the broker's pool)
        await asyncio.sleep(0.1)
        process = await made._process_without_spare()
        return process, len(made._creating)
    process, creating = run(main())
    assert repr(process) == "new-0"   # the one started first, not one of its own
    assert creating == 1              # ... and the pool's spare starts again behind it


def test_waiting_starts_get_processes_oldest_first_and_each_its_own():
    async def main():
        made = launcher(nothing_to_lend, start_s=0.05)
        return await asyncio.gather(*[made._process_without_spare() for _ in range(3)])
    assert [repr(p) for p in run(main())] == ["new-0", "new-1", "new-2"]


def test_a_start_that_gives_up_leaves_its_claim_behind_and_the_process_it_was_handed_as_a_spare():
    async def main():
        made = launcher(nothing_to_lend, start_s=0.2)
        start = asyncio.ensure_future(made._process_without_spare())
        await asyncio.sleep(0.05)
        start.cancel()
        with pytest.raises(asyncio.CancelledError):
            await start
        await asyncio.sleep(0.3)          # the spare started for it arrives: no claim takes it
        return made.spares, list(made._claims)
    assert run(main()) == (1, [])


def test_spares_ahead_of_need_wait_for_an_idle_core_but_a_start_waiting_for_a_process_does_not():
    async def main():
        machine = Machine(idle=False)
        made = launcher(nothing_to_lend, spares=2, start_s=0.05, machine=machine)
        made.refill()
        await asyncio.sleep(0.2)
        busy = (made.spares, len(made._creating))          # the clients have the cores: none started
        process = await made._process_without_spare()       # ... but a start waiting gets its own
        machine.idle = True
        await asyncio.sleep(0.3)
        return busy, repr(process), made.spares
    busy, process, spares = run(main())
    assert busy == (0, 0)
    assert process == "new-0"
    assert spares == 2       # an idle core: the pool fills, one spare after the other


def spawns_ahead_of_need(made: RayReplicaLauncher) -> list[float]:
    """When `made` starts a spare that no waiting start asked for (noted as it happens: a
    start that comes while it is on its way may still take it)."""
    ahead: list[float] = []
    spawn = made._spawn_spare

    def spawn_noting() -> asyncio.Task:
        if len(made._claims) <= len(made._creating):
            ahead.append(asyncio.get_running_loop().time())
        return spawn()

    made._spawn_spare = spawn_noting  # type: ignore[method-assign]
    return ahead


def test_on_a_machine_that_stays_busy_with_starts_finding_no_spare_a_spare_waits_for_an_idle_core_only_so_long():
    async def main():
        made, _ = refilling(spares=1, idle=False, idle_wait_max_s=0.3)
        ahead = spawns_ahead_of_need(made)
        await asyncio.sleep(0.15)
        waiting = list(ahead)
        for _ in range(5):        # starts keep finding the pool empty (a client creating topics)
            await made._process_without_spare()
            await asyncio.sleep(0.05)
        return waiting, ahead
    waiting, ahead = run(main())
    assert waiting == []       # the first half of the wait: the machine is busy, none starts
    assert len(ahead) >= 1     # then one is forced in (a start may have taken it on its way)


def test_on_a_busy_machine_whose_starts_find_spares_a_spare_waits_for_an_idle_core():
    """A client created a topic (its replicas took spares) and now produces to it, busy."""
    async def main():
        made, machine = refilling(spares=2, idle=True, idle_wait_max_s=0.2)
        while made.spares < 2:
            await asyncio.sleep(0.01)
        machine.idle = False
        for _ in range(2):        # the topic's replicas start, each in a spare (as `start` does)
            made._demand.taken()
            made._spares.pop()
            made.refill()
        return await busy_then_idle(made, machine, busy_s=0.6, idle_s=0.3)
    assert run(main()) == ((0, 0), 2)


def test_on_a_machine_busy_serving_with_no_replica_starting_a_spare_waits_for_an_idle_core():
    async def main():
        made, machine = refilling(spares=1, idle=False, idle_wait_max_s=0.1)
        return await busy_then_idle(made, machine, busy_s=0.5, idle_s=0.2)
    assert run(main()) == ((0, 0), 1)


def test_spares_ahead_of_need_start_one_at_a_time():
    async def main():
        made = launcher(nothing_to_lend, spares=3, start_s=0.1)
        made.refill()
        most = 0
        for _ in range(40):
            most = max(most, len(made._creating))
            await asyncio.sleep(0.01)
        return most, made.spares
    most, spares = run(main())
    assert most == 1 and spares == 3


def run(coro):
    return asyncio.run(coro)
