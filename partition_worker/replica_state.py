"""Leadership, ISR and high-watermark arithmetic of one partition replica (pure, no Ray).

The leader's high watermark is the smallest log end offset among the in-sync replicas:
every ISR member has fetched everything below it. A follower's high watermark is what
the leader last told it, bounded by its own log end.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rafka.common.errors import ErrorCode


@dataclass(frozen=True)
class LeaderAndIsr:
    """What the controller tells a replica: its role under one leader epoch."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    controller_epoch: int


@dataclass
class ReplicaState:
    broker_id: int
    leader: int = -1
    leader_epoch: int = -1
    controller_epoch: int = -1
    isr: tuple[int, ...] = ()
    replicas: tuple[int, ...] = ()
    follower_end_offsets: dict[int, int] = field(default_factory=dict)
    high_watermark: int = 0

    @property
    def is_leader(self) -> bool:
        return self.leader == self.broker_id

    def apply(self, order: LeaderAndIsr, log_end_offset: int) -> ErrorCode:
        """Take a LeaderAndIsr order; refuse one from an older controller or leader epoch."""
        if order.controller_epoch < self.controller_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if order.leader_epoch < self.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        was_leader = self.is_leader and order.leader_epoch == self.leader_epoch
        self.leader, self.leader_epoch = order.leader, order.leader_epoch
        self.controller_epoch = order.controller_epoch
        self.isr, self.replicas = tuple(order.isr), tuple(order.replicas)
        if self.is_leader and not was_leader:
            # A new leader knows nothing of its followers yet (Kafka resets their state).
            self.follower_end_offsets = {b: -1 for b in self.replicas if b != self.broker_id}
        self.high_watermark = min(self.high_watermark, log_end_offset)
        if self.is_leader:
            self.advance_high_watermark(log_end_offset)
        return ErrorCode.NONE

    def advance_high_watermark(self, leader_end_offset: int) -> int:
        """Recompute the leader's high watermark; it never moves backwards."""
        ends = [leader_end_offset]
        ends += [self.follower_end_offsets.get(b, -1) for b in self.isr if b != self.broker_id]
        candidate = min(ends)
        if candidate > self.high_watermark:
            self.high_watermark = candidate
        return self.high_watermark
