"""The leader's view of its followers: caught-up times, high watermark, ISR shrink and
expand proposals, acks=all outcomes (Kafka 3.9's Partition and Replica, without a process)."""
from __future__ import annotations

from rafka.common.errors import ErrorCode
from rafka.partition_worker.replica_state import FollowerProgress, LeaderAndIsr, ReplicaState

LAG_MS = 30_000
T = 1_000_000   # a clock reading long past any follower's (never) caught-up time 0


def leader(isr=(1, 2, 3), replicas=(1, 2, 3), log_end=100, now_ms=0, epoch=5) -> ReplicaState:
    state = ReplicaState(broker_id=1)
    assert state.apply(LeaderAndIsr(1, epoch, isr, replicas, 1), log_end, now_ms) is ErrorCode.NONE
    return state


def test_a_fetch_at_the_leaders_end_is_caught_up_now():
    p = FollowerProgress()
    p.fetched(100, 100, now_ms=5_000)
    assert p.last_caught_up_ms == 5_000 and p.caught_up(100, 5_000 + LAG_MS + 1, LAG_MS)


def test_a_fetch_reaching_the_previous_fetchs_leader_end_was_caught_up_then():
    p = FollowerProgress()
    p.fetched(50, 80, now_ms=1_000)      # behind: not caught up
    assert p.last_caught_up_ms == 0
    p.fetched(80, 120, now_ms=2_000)     # reached where the leader was at the last fetch
    assert p.last_caught_up_ms == 1_000
    p.fetched(90, 130, now_ms=3_000)     # short of 120: no progress on the clock
    assert p.last_caught_up_ms == 1_000
    assert not p.caught_up(130, 1_000 + LAG_MS + 1, LAG_MS)


def test_high_watermark_is_the_smallest_end_in_the_isr_and_never_goes_back():
    state = leader()
    assert state.high_watermark == 0
    state.follower_fetched(2, 60, 100, T + 0, LAG_MS)
    assert state.high_watermark == 0                    # follower 3 has fetched nothing
    assert state.follower_fetched(3, 40, 100, T + 0, LAG_MS) == 40
    assert state.follower_fetched(2, 30, 100, T + 0, LAG_MS) == 40   # a follower after truncation
    assert state.follower_fetched(3, 100, 100, T + 0, LAG_MS) == 40   # 2 is the smallest now
    assert state.follower_fetched(2, 100, 100, T + 0, LAG_MS) == 100


def test_high_watermark_waits_for_a_caught_up_follower_about_to_join():
    state = leader(isr=(1, 2), replicas=(1, 2, 3))
    state.follower_fetched(2, 100, 100, T + 10, LAG_MS)
    assert state.high_watermark == 100
    state.followers[3].fetched(70, 110, now_ms=T + 20)
    state.followers[3].fetched(110, 110, now_ms=T + 21)       # caught up, not yet in the ISR
    state.follower_fetched(2, 110, 120, T + 22, LAG_MS)
    assert state.high_watermark == 110


def test_a_lagging_isr_member_is_dropped_after_the_lag_time():
    state = leader(now_ms=T)
    state.follower_fetched(2, 100, 100, T + 1_000, LAG_MS)
    state.follower_fetched(3, 100, 100, T + 1_000, LAG_MS)
    assert state.out_of_sync_replicas(150, T + 1_000 + LAG_MS, LAG_MS) == ()
    state.follower_fetched(2, 150, 150, T + 20_000, LAG_MS)   # 2 keeps up, 3 stops fetching
    assert state.out_of_sync_replicas(150, T + 1_000 + LAG_MS + 1, LAG_MS) == (3,)
    assert state.propose_isr(150, T + 1_000 + LAG_MS + 1, LAG_MS) == (1, 2)
    assert state.pending_isr == (1, 2) and state.isr == (1, 2, 3)   # applied only when confirmed
    assert state.propose_isr(150, T + 1_000 + LAG_MS + 1, LAG_MS) is None   # one proposal at a time
    state.isr_confirmed((1, 2), 150)
    assert state.isr == (1, 2) and state.pending_isr is None


def test_new_isr_members_are_not_dropped_before_their_first_fetch():
    state = leader(now_ms=50_000)
    assert state.out_of_sync_replicas(100, 50_000 + LAG_MS, LAG_MS) == ()
    assert state.out_of_sync_replicas(100, 50_000 + LAG_MS + 1, LAG_MS) == (2, 3)


def test_a_follower_joins_once_it_reaches_the_high_watermark_and_the_epoch_start():
    state = leader(isr=(1, 2), replicas=(1, 2, 3), log_end=100)
    state.follower_fetched(2, 120, 120, T + 0, LAG_MS)
    assert state.high_watermark == 120
    state.follower_fetched(3, 99, 120, T + 0, LAG_MS)
    assert state.in_sync_candidates() == ()
    state.follower_fetched(3, 120, 120, T + 1, LAG_MS)
    assert state.in_sync_candidates() == (3,)
    assert state.propose_isr(120, T + 2, LAG_MS) == (1, 2, 3)
    state.isr_confirmed(None, 120)               # refused (a stale zk version): proposed again later
    assert state.isr == (1, 2) and state.propose_isr(120, T + 3, LAG_MS) == (1, 2, 3)


def test_a_follower_the_controller_will_not_add_is_not_waited_for():
    """The new leader's scene after a log dir failed: follower 3, offline there, fetched once
    at the log end (caught up, about to join); its expansion is refused INELIGIBLE_REPLICA
    and it fetches no more. acks=all then waits for the ISR alone, not for
    replica.lag.time.max.ms; a fetch of 3's at the log end counts as caught up again."""
    state = leader(isr=(1, 2), replicas=(1, 2, 3), log_end=127, now_ms=T)
    state.follower_fetched(3, 127, 127, T + 10, LAG_MS)
    state.follower_fetched(2, 127, 127, T + 11, LAG_MS)
    assert state.propose_isr(127, T + 12, LAG_MS) == (1, 2, 3)
    state.refused_as_ineligible((1, 2, 3))
    state.isr_confirmed(None, 127)
    # 128 appended; 2 fetches it, 3 never fetches again
    assert state.follower_fetched(2, 128, 128, T + 20, LAG_MS) == 128
    assert state.acks_all_outcome(128, 2) is ErrorCode.NONE
    assert state.in_sync_candidates() == () and state.propose_isr(128, T + 21, LAG_MS) is None
    state.follower_fetched(3, 128, 128, T + 30, LAG_MS)      # back and at the end: joining again
    assert state.followers[3].caught_up(129, T + 31, LAG_MS) and state.in_sync_candidates() == (3,)
    state.followers[2].fetched(129, 129, T + 32)
    assert state.advance_high_watermark(130, T + 33, LAG_MS) == 128   # waits for 3 again


def test_a_refusal_leaves_isr_members_and_other_followers_alone():
    state = leader(isr=(1, 2), replicas=(1, 2, 3, 4), now_ms=T)
    state.follower_fetched(3, 100, 100, T + 10, LAG_MS)
    state.follower_fetched(4, 100, 100, T + 10, LAG_MS)
    state.refused_as_ineligible((1, 2, 3))
    assert state.followers[2].last_caught_up_ms == T      # an ISR member: as the new leader set it
    assert state.followers[3].last_caught_up_ms == 0 and state.followers[4].last_caught_up_ms == T + 10


def test_acks_all_waits_for_the_high_watermark_then_checks_min_isr():
    state = leader(isr=(1, 2), replicas=(1, 2))
    assert state.acks_all_outcome(100, 2) is None          # not replicated yet
    state.follower_fetched(2, 100, 100, T + 0, LAG_MS)
    assert state.acks_all_outcome(100, 2) is ErrorCode.NONE
    state.isr_confirmed((1,), 100)
    assert state.acks_all_outcome(100, 2) is ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    follower = ReplicaState(broker_id=2)
    follower.apply(LeaderAndIsr(1, 5, (1, 2), (1, 2), 1), 0)
    assert follower.acks_all_outcome(0, 1) is ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_follower_takes_the_leaders_high_watermark_bounded_by_its_log_end():
    follower = ReplicaState(broker_id=2)
    follower.apply(LeaderAndIsr(1, 5, (1, 2), (1, 2), 1), 50)
    assert follower.follower_high_watermark(80, 60) == 60
    assert follower.follower_high_watermark(55, 60) == 55
