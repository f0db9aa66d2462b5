"""The machine's idle cores between two looks, read from /proc/stat's counters."""
from __future__ import annotations

from pathlib import Path

from rafka.coordinator.broker.idle_cpu import CpuTimes, IdleCpu, read_cpu_times

PROC_STAT = """cpu  5856388 3196 1714913 5950601 27966 0 45753 3393 0 0
cpu0 2851068 2039 822191 3097916 5111 0 18613 1670 0 0
cpu1 3005320 1157 892721 2852684 22854 0 27140 1722 0 0
intr 123 0 0
ctxt 456
"""


def test_the_counters_are_read_with_iowait_as_idle_and_one_core_per_cpu_line(tmp_path: Path):
    stat = tmp_path / "stat"
    stat.write_text(PROC_STAT)
    assert read_cpu_times(str(stat)) == CpuTimes(idle=5950601 + 27966,
                                                 total=5856388 + 3196 + 1714913 + 5950601 + 27966 + 45753 + 3393,
                                                 cores=2)


def test_a_machine_without_proc_stat_says_nothing(tmp_path: Path):
    assert read_cpu_times(str(tmp_path / "missing")) is None
    assert IdleCpu(lambda: None).has_a_core_to_spare()    # unknown: as if idle


def test_idle_cores_are_averaged_between_looks():
    looks = iter([CpuTimes(idle=0, total=0, cores=2),
                  CpuTimes(idle=150, total=200, cores=2),     # 1.5 of 2 cores idle
                  CpuTimes(idle=170, total=400, cores=2)])    # 0.2 of 2 cores idle
    cpu = IdleCpu(lambda: next(looks))
    assert cpu.idle_cores() == 1.5
    assert not cpu.has_a_core_to_spare()


def test_a_look_within_the_same_clock_tick_says_nothing():
    cpu = IdleCpu(lambda: CpuTimes(idle=5, total=10, cores=2))
    assert cpu.idle_cores() is None


def test_this_machine_reports_its_cores():
    times = read_cpu_times()
    assert times is None or (times.cores >= 1 and 0 <= times.idle <= times.total)
