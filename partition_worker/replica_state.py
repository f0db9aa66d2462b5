"""Leadership, followers, ISR and high-watermark arithmetic of one partition replica (pure, no Ray).

As Kafka 3.9's `Partition` and `Replica`:
- a follower's fetch offset tells the leader that the follower has everything before it
  (its log end offset); the leader notes when the follower was last *caught up*: at this
  fetch if it asked for the leader's log end, or at its previous fetch if it asked for at
  least what the leader's log end was then (`Replica.updateFetchStateOrThrow`);
- the high watermark is the smallest log end offset among the leader and the followers in
  the *maximal* ISR (the ISR plus a pending expansion) or caught up and about to join;
  it never moves backwards (`Partition.maybeIncrementLeaderHW`);
- an ISR member not caught up for `replica.lag.time.max.ms` is dropped
  (`getOutOfSyncReplicas`); a follower outside the ISR joins once its log end reaches the
  high watermark and the start of the leader's epoch (`isFollowerInSync`);
- an acks=all produce completes once the high watermark passes it; if the ISR is then
  smaller than `min.insync.replicas` it fails with NOT_ENOUGH_REPLICAS_AFTER_APPEND
  (`Partition.checkEnoughReplicasReachOffset`).
A follower's high watermark is what the leader last told it, bounded by its own log end.
ISR changes are *proposed* here and applied once the controller's write of the partition
state confirms them (`pending_isr`), as Kafka's AlterPartition.
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
    partition_epoch: int = -1   # the partition state's version, which an ISR change must name


@dataclass
class FollowerProgress:
    """What the leader knows of one follower (Kafka's `ReplicaState`)."""

    log_end_offset: int = -1
    last_caught_up_ms: int = 0
    last_fetch_leader_end: int = -1
    last_fetch_ms: int = 0

    def fetched(self, fetch_offset: int, leader_end_offset: int, now_ms: int) -> None:
        """A fetch at `fetch_offset` arrived at `now_ms` while the leader's log ended at `leader_end_offset`."""
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_end:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_end = leader_end_offset
        self.last_fetch_ms = now_ms

    def caught_up(self, leader_end_offset: int, now_ms: int, lag_time_max_ms: int) -> bool:
        """At the leader's log end, or caught up within the last `lag_time_max_ms`."""
        return self.log_end_offset >= leader_end_offset or now_ms - self.last_caught_up_ms <= lag_time_max_ms


@dataclass
class ReplicaState:
    broker_id: int
    leader: int = -1
    leader_epoch: int = -1
    controller_epoch: int = -1
    isr: tuple[int, ...] = ()
    replicas: tuple[int, ...] = ()
    followers: dict[int, FollowerProgress] = field(default_factory=dict)
    high_watermark: int = 0
    leader_epoch_start_offset: int = 0
    pending_isr: tuple[int, ...] | None = None   # proposed to the controller, not yet confirmed
    partition_epoch: int = -1

    @property
    def is_leader(self) -> bool:
        return self.leader == self.broker_id

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The ISR the high watermark waits for: the ISR and any member a pending change adds."""
        if self.pending_isr is None:
            return self.isr
        return self.isr + tuple(b for b in self.pending_isr if b not in self.isr)

    def apply(self, order: LeaderAndIsr, log_end_offset: int, now_ms: int = 0) -> ErrorCode:
        """Take a LeaderAndIsr order; refuse one from an older controller or leader epoch."""
        if order.controller_epoch < self.controller_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if order.leader_epoch < self.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        was_leader = self.is_leader and order.leader_epoch == self.leader_epoch
        self.leader, self.leader_epoch = order.leader, order.leader_epoch
        self.controller_epoch = order.controller_epoch
        self.isr, self.replicas = tuple(order.isr), tuple(order.replicas)
        self.partition_epoch = order.partition_epoch
        self.pending_isr = None
        if self.is_leader and not was_leader:
            # A new leader knows nothing of its followers' logs yet; ISR members count as
            # caught up now, so they are not dropped before their first fetch (Kafka's
            # `resetReplicaState`). The new epoch starts at the current log end.
            self.followers = {b: FollowerProgress(last_caught_up_ms=now_ms if b in self.isr else 0)
                              for b in self.replicas if b != self.broker_id}
            self.leader_epoch_start_offset = log_end_offset
        self.high_watermark = min(self.high_watermark, log_end_offset)
        if self.is_leader:
            self.advance_high_watermark(log_end_offset)
        return ErrorCode.NONE

    # -- the leader's view of its followers ----------------------------------------------
    def follower_fetched(self, follower: int, fetch_offset: int, leader_end_offset: int, now_ms: int,
                         lag_time_max_ms: int) -> int:
        """Note a follower's fetch and return the (possibly advanced) high watermark.
        A broker that holds no replica of the partition is ignored."""
        progress = self.followers.get(follower)
        if progress is not None:
            progress.fetched(fetch_offset, leader_end_offset, now_ms)
        return self.advance_high_watermark(leader_end_offset, now_ms, lag_time_max_ms)

    def advance_high_watermark(self, leader_end_offset: int, now_ms: int | None = None,
                               lag_time_max_ms: int = 0) -> int:
        """Recompute the leader's high watermark; it never moves backwards. With `now_ms`,
        followers outside the ISR that are caught up and about to join are waited for too."""
        candidate = leader_end_offset
        maximal = self.maximal_isr
        for broker, progress in self.followers.items():
            joining = (now_ms is not None and broker not in maximal
                       and progress.caught_up(leader_end_offset, now_ms, lag_time_max_ms))
            if broker in maximal or joining:
                candidate = min(candidate, progress.log_end_offset)
        if candidate > self.high_watermark:
            self.high_watermark = candidate
        return self.high_watermark

    def out_of_sync_replicas(self, leader_end_offset: int, now_ms: int, lag_time_max_ms: int) -> tuple[int, ...]:
        """ISR followers not caught up within `lag_time_max_ms`: to drop from the ISR."""
        return tuple(b for b in self.isr if b != self.broker_id and b in self.followers
                     and not self.followers[b].caught_up(leader_end_offset, now_ms, lag_time_max_ms))

    def in_sync_candidates(self) -> tuple[int, ...]:
        """Followers outside the ISR whose log reached the high watermark and this leader
        epoch's start: to add to the ISR."""
        return tuple(b for b, p in sorted(self.followers.items())
                     if b not in self.isr and p.log_end_offset >= self.high_watermark
                     and p.log_end_offset >= self.leader_epoch_start_offset)

    def propose_isr(self, leader_end_offset: int, now_ms: int, lag_time_max_ms: int) -> tuple[int, ...] | None:
        """The ISR this leader should ask the controller for (shrink the lagging, expand the
        caught up), or None when it is right as it is or a proposal is still pending."""
        if not self.is_leader or self.pending_isr is not None:
            return None
        drop = set(self.out_of_sync_replicas(leader_end_offset, now_ms, lag_time_max_ms))
        add = self.in_sync_candidates()
        if not drop and not add:
            return None
        proposed = tuple(b for b in self.replicas if (b in self.isr and b not in drop) or b in add)
        self.pending_isr = proposed
        return proposed

    def refused_as_ineligible(self, proposed: tuple[int, ...]) -> None:
        """The controller would not add the followers `proposed` adds (INELIGIBLE_REPLICA: a
        replica offline on its broker, or a broker not alive). They stop counting as caught up,
        so the high watermark does not wait for them as about to join: a replica on a failed log
        dir fetches no more, and acks=all produces would otherwise wait replica.lag.time.max.ms
        for it. Its next fetch counts again, as any other's."""
        for broker in proposed:
            progress = self.followers.get(broker)
            if broker not in self.isr and progress is not None:
                progress.last_caught_up_ms = 0

    def isr_confirmed(self, isr: tuple[int, ...] | None, leader_end_offset: int, partition_epoch: int = -1) -> None:
        """The controller's answer to a proposal: the ISR now in force and the partition epoch
        it was written at (None: refused, keep the old one and propose again later)."""
        if isr is not None:
            self.isr = tuple(isr)
            self.partition_epoch = partition_epoch
        self.pending_isr = None
        if self.is_leader:
            self.advance_high_watermark(leader_end_offset)

    # -- acks=all --------------------------------------------------------------------------
    def acks_all_outcome(self, required_offset: int, min_insync_replicas: int) -> ErrorCode | None:
        """None while the high watermark has not passed `required_offset` (the produce waits);
        then NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below the minimum."""
        if not self.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.high_watermark < required_offset:
            return None
        if len(self.isr) < min_insync_replicas:
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NONE

    # -- a follower ----------------------------------------------------------------------
    def follower_high_watermark(self, leader_high_watermark: int, log_end_offset: int) -> int:
        """A follower takes the leader's high watermark, bounded by its own log end."""
        self.high_watermark = min(leader_high_watermark, log_end_offset)
        return self.high_watermark
