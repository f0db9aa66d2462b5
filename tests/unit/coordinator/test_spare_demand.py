"""Spare replica processes follow demand: the configured number while replicas start, none
once the broker has been quiet for replica.dormant.after.ms."""
from __future__ import annotations

from rafka.coordinator.broker.spare_demand import SpareDemand


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_broker_keeps_its_spares_until_it_has_been_quiet_for_the_dormancy_delay():
    clock = Clock()
    demand = SpareDemand(4, quiet_after_s=300, clock=clock)
    assert demand.wanted() == 4 and demand.quiet_in_s() == 300   # a starting broker is busy
    clock.now += 299
    assert demand.wanted() == 4 and demand.quiet_in_s() == 1
    clock.now += 1
    assert demand.quiet() and demand.wanted() == 0 and demand.quiet_in_s() == 0


def test_a_start_after_a_quiet_spell_wants_the_whole_pool_again_for_the_next_delay():
    clock = Clock()
    demand = SpareDemand(4, quiet_after_s=10, clock=clock)
    clock.now += 60
    assert demand.wanted() == 0
    demand.taken()
    assert demand.wanted() == 4 and demand.quiet_in_s() == 10
    clock.now += 9
    demand.taken()                                   # every start pushes quiet back
    clock.now += 9
    assert demand.wanted() == 4


def test_without_dormancy_or_spares_the_pool_never_changes():
    clock = Clock()
    always = SpareDemand(4, quiet_after_s=None, clock=clock)
    none = SpareDemand(0, quiet_after_s=5, clock=clock)
    clock.now += 10_000
    assert always.wanted() == 4 and always.quiet_in_s() is None and not always.quiet()
    assert none.wanted() == 0 and none.when_quiet == 0
