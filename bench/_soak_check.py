"""The idempotence soak's pure parts: which topics a wave writes, and the check of what was read back.

Waves: the soak writes `per_wave` topics at a time for a wave, then moves on to the next ones,
round the topics; replicas written in older waves fall idle and are put to rest (to make room
under `replica.max.live.processes`, or after `replica.dormant.after.ms`), and are woken when
their topics come round again. `per_wave` is chosen so that the run goes round every topic.

The check, per partition, of the records read back (offset, value) against those the producer
had acknowledged (value -> offset, None when the client did not say): a value read twice is a
duplicate, an offset missing between the log start (0: the soak deletes nothing) and the
last one read is a gap, and an acknowledged value not read back, or read at another offset
than the one acknowledged, is missing.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field


def per_wave(topics: int, wave_s: float, duration_s: float) -> int:
    """Topics a wave writes so that `duration_s` of waves of `wave_s` goes round all `topics`."""
    waves = max(1, int(duration_s // wave_s))
    return max(1, math.ceil(topics / waves))


def wave_topics(topics: int, wave: int, count: int) -> list[int]:
    """The indexes of the `count` topics wave number `wave` writes, round `topics`."""
    start = wave * count
    return [(start + i) % topics for i in range(min(count, topics))]


@dataclass
class Findings:
    """What the read-back found, summed over partitions."""

    records: int = 0
    duplicates: int = 0
    gaps: int = 0
    missing: int = 0
    rereads: int = 0
    examples: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return self.duplicates == self.gaps == self.missing == 0

    def add(self, other: "Findings") -> None:
        self.records += other.records
        self.duplicates += other.duplicates
        self.gaps += other.gaps
        self.missing += other.missing
        self.rereads += other.rereads
        self.examples.extend(other.examples[:max(0, 10 - len(self.examples))])


def check_partition(read: list[tuple[int, bytes]], acked: dict[bytes, int | None], log_start: int = 0) -> Findings:
    """One partition's records read back, (offset, value) in any order, against the values the
    producer acknowledged (value -> offset, None: not told)."""
    stored = dict(read)
    rereads = len(read) - len(stored)
    counts = Counter(stored.values())
    duplicates = sum(n - 1 for n in counts.values() if n > 1)
    offsets = sorted(stored)
    gaps = (offsets[-1] - log_start + 1 - len(offsets)) if offsets else 0
    at: dict[bytes, set[int]] = {}
    for offset, value in stored.items():
        at.setdefault(value, set()).add(offset)
    examples = [f"{value!r} at offsets {sorted(at[value])}" for value, n in counts.items() if n > 1][:3]
    missing = sum(1 for value, offset in acked.items()
                  if value not in at or (offset is not None and offset not in at[value]))
    return Findings(records=len(stored), duplicates=duplicates, gaps=gaps, missing=missing, rereads=rereads,
                    examples=examples)
