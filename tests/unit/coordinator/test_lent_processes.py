"""A replica start that finds no spare process takes the process of an idle replica rested for
it (`RayReplicaLauncher.borrow`), else a spare ready meanwhile, else a new process; a start that
gives up leaves the process it was handed as a spare. No Ray: the processes are stand-ins."""
from __future__ import annotations

import asyncio

import pytest

from rafka.coordinator.broker.replica_launcher import LaunchedReplica, RayReplicaLauncher

NEW = "a new process"


def launcher(borrow) -> RayReplicaLauncher:
    made = RayReplicaLauncher(1, ("/nonexistent",), "ns", None, spares=0)
    made.borrow = borrow
    made._new_process = lambda: NEW   # (no Ray here)
    return made


def rested(process: str) -> LaunchedReplica:
    return LaunchedReplica(process, "sock", "/nonexistent", 1)


def test_the_start_takes_the_process_of_the_replica_rested_for_it_without_waiting_for_the_rest_to_finish():
    finished = []

    async def main():
        async def borrow():
            made.release(rested("p-idle"))   # the rest has closed the replica: its process is free
            await asyncio.sleep(0.2)         # ... and goes on to publish the dormant partition
            finished.append(True)
            return True
        made = launcher(borrow)
        process = await made._process_without_spare()
        return process, list(finished), made.spares
    assert run(main()) == ("p-idle", [], 0)


def test_with_no_idle_replica_a_spare_ready_meanwhile_else_a_new_process():
    async def main():
        async def no_idle_replica():
            return False
        made = launcher(no_idle_replica)
        first = await made._process_without_spare()
        made._spares.append("p-spare")
        # (a spare that became ready while the lending failed)
        async def spare_meanwhile():
            return False
        made.borrow = spare_meanwhile
        second = await made._process_without_spare()
        return first, second
    assert run(main()) == (NEW, "p-spare")


def test_two_starts_each_get_the_process_of_their_own_rest_in_order():
    async def main():
        async def borrow():
            await asyncio.sleep(0.01)
            made.release(rested(f"p{len(order)}"))
            order.append(True)
            return True
        order: list = []
        made = launcher(borrow)
        return await asyncio.gather(made._process_without_spare(), made._process_without_spare())
    assert sorted(run(main())) == ["p0", "p1"]


def test_a_start_that_gives_up_leaves_its_process_as_a_spare_and_its_claim_behind():
    async def main():
        hand_over = asyncio.Event()

        async def slow_borrow():
            await hand_over.wait()
            return False
        made = launcher(slow_borrow)
        start = asyncio.ensure_future(made._process_without_spare())
        await asyncio.sleep(0.01)
        start.cancel()
        with pytest.raises(asyncio.CancelledError):
            await start
        made.release(rested("p-late"), wanted=True)   # no claim is left: it becomes a spare
        hand_over.set()
        return made.spares, list(made._claims)
    assert run(main()) == (1, [])


def run(coro):
    return asyncio.run(coro)
