"""The classic consumer-group state machine (Kafka 3.9's GroupCoordinator), driven with a fake
clock: joins, syncs, heartbeats, leaves, timers, static members, offsets validation, takeover."""
from __future__ import annotations

import itertools

import pytest

from rafka.common.errors import ErrorCode
from rafka.coordinator.group.group_messages import (
    GroupSnapshot, HeartbeatRequest, HeartbeatResponse, JoinMember, JoinRequest, JoinResponse, LeaveRequest,
    LeaveResponse, MemberSnapshot, SyncRequest, SyncResponse,
)
from rafka.coordinator.group.group_metadata import (
    COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE, GroupConfig,
)
from rafka.coordinator.group.group_state import GroupCoordinatorState

E = ErrorCode
SESSION = 10_000
REBALANCE = 20_000
DELAY = 3_000
CONFIG = GroupConfig(initial_rebalance_delay_ms=DELAY)
RANGE = (("range", b"range-meta"),)


class Harness:
    """A coordinator, a fake clock and the answers it has given, by token."""

    def __init__(self, config: GroupConfig = CONFIG, now: int = 1_000) -> None:
        self.state = GroupCoordinatorState(config)
        self.now = now
        self._tokens = itertools.count()
        self.answers: dict[int, object] = {}
        self.persisted: list[GroupSnapshot] = []

    def _take(self, outcome) -> None:
        for token, response in outcome.completions:
            assert token not in self.answers, f"token {token} answered twice"
            self.answers[token] = response
        self.persisted.extend(outcome.persist)

    def join(self, member_id="", *, group="g", instance=None, protocols=RANGE, version=5, session=SESSION,
             rebalance=REBALANCE, client="client", ptype="consumer") -> int:
        token = next(self._tokens)
        self._take(self.state.join(token, JoinRequest(
            group, member_id, instance, session, rebalance, ptype, protocols, client, "/10.0.0.1", version),
            self.now))
        return token

    def sync(self, member_id, generation, assignments=(), *, group="g", instance=None, ptype=None, pname=None) -> int:
        token = next(self._tokens)
        self._take(self.state.sync(token, SyncRequest(
            group, generation, member_id, instance, ptype, pname, tuple(assignments)), self.now))
        return token

    def heartbeat(self, member_id, generation, *, group="g", instance=None) -> ErrorCode:
        token = next(self._tokens)
        self._take(self.state.heartbeat(token, HeartbeatRequest(group, generation, member_id, instance), self.now))
        response = self.answers.pop(token)
        assert isinstance(response, HeartbeatResponse)
        return response.error

    def leave(self, *members, group="g") -> LeaveResponse:
        token = next(self._tokens)
        self._take(self.state.leave(token, LeaveRequest(group, tuple(members)), self.now))
        return self.answers.pop(token)

    def advance(self, ms: int) -> None:
        self.now += ms
        self._take(self.state.tick(self.now))

    def settle(self) -> None:
        """Let the (initial) rebalance delay run out, however often new joins extended it."""
        while self.state.state_name("g") == PREPARING_REBALANCE:
            self.advance(self.state.next_deadline_ms() - self.now)

    def answered(self, token: int) -> bool:
        return token in self.answers

    def answer(self, token: int):
        assert token in self.answers, f"token {token} not answered yet"
        return self.answers[token]

    def join_new(self, client="client", **kw) -> tuple[int, str]:
        """JoinGroup v4+ round trip: learn the member id, then join with it."""
        first = self.answer(self.join(client=client, **kw))
        assert first.error is E.MEMBER_ID_REQUIRED
        return self.join(first.member_id, client=client, **kw), first.member_id

    def stable_group(self, n: int = 2, **kw) -> list[str]:
        """n members joined in generation 1 and synced; the first is the leader."""
        joins = [self.join_new(client=f"c{i}", **kw) for i in range(n)]
        self.settle()
        ids = [member_id for _, member_id in joins]
        leader = self.answer(joins[0][0]).leader
        ids.sort(key=lambda m: m != leader)
        for member_id in ids[1:]:
            self.sync(member_id, 1)
        self.sync(leader, 1, [(m, f"assign-{m}".encode()) for m in ids])
        assert self.state.state_name("g") == STABLE
        return ids


# -- member ids -------------------------------------------------------------------------------
def test_v4_join_without_member_id_gets_member_id_required_with_client_prefixed_id():
    h = Harness()
    r = h.answer(h.join(client="my-client"))
    assert r.error is E.MEMBER_ID_REQUIRED
    assert r.member_id.startswith("my-client-") and len(r.member_id) == len("my-client-") + 36
    assert h.state.state_name("g") == EMPTY  # pending members are not members


def test_rejoin_with_the_required_member_id_joins_the_group():
    h = Harness()
    token, member_id = h.join_new()
    assert not h.answered(token)
    assert h.state.state_name("g") == PREPARING_REBALANCE
    h.advance(DELAY)
    r = h.answer(token)
    assert (r.error, r.member_id, r.generation_id, r.leader) == (E.NONE, member_id, 1, member_id)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_join_v0_to_v3_is_admitted_directly(version):
    h = Harness()
    token = h.join(version=version)
    assert not h.answered(token)
    h.advance(DELAY)
    r = h.answer(token)
    assert r.error is E.NONE and r.member_id.startswith("client-") and r.generation_id == 1


def test_pending_member_expires_after_its_session_timeout():
    h = Harness()
    member_id = h.answer(h.join()).member_id
    assert h.state.next_deadline_ms() == h.now + SESSION
    h.advance(SESSION)
    r = h.answer(h.join(member_id))
    assert r.error is E.UNKNOWN_MEMBER_ID


def test_pending_member_holds_back_the_rebalance_until_it_joins():
    h = Harness()
    ids = h.stable_group(1)
    pending = h.answer(h.join(client="late")).member_id
    leader_rejoin = h.join(ids[0])  # leader rejoin: rebalance, but a member id is still pending
    h.advance(1)
    assert not h.answered(leader_rejoin)
    late = h.join(pending, client="late")
    assert h.answer(leader_rejoin).generation_id == 2 and h.answer(late).generation_id == 2


def test_static_member_skips_member_id_required_and_gets_instance_prefixed_id():
    h = Harness()
    token = h.join(instance="host-1", version=7)
    h.advance(DELAY)
    r = h.answer(token)
    assert r.error is E.NONE and r.member_id.startswith("host-1-")


# -- refusals ---------------------------------------------------------------------------------
@pytest.mark.parametrize("session", [5_999, 1_800_001], ids=["below-min", "above-max"])
def test_session_timeout_outside_configured_bounds_is_refused(session):
    h = Harness()
    r = h.answer(h.join(session=session))
    assert r.error is E.INVALID_SESSION_TIMEOUT
    assert h.state.group_ids() == []


def test_empty_group_id_is_refused_by_every_membership_api():
    h = Harness()
    assert h.answer(h.join(group="")).error is E.INVALID_GROUP_ID
    assert h.answer(h.sync("m", 1, group="")).error is E.INVALID_GROUP_ID
    assert h.heartbeat("m", 1, group="") is E.INVALID_GROUP_ID
    assert h.leave(("m", None), group="").error is E.INVALID_GROUP_ID


def test_joining_with_another_protocol_type_is_inconsistent():
    h = Harness()
    h.stable_group(1)
    r = h.answer(h.join(ptype="connect"))
    assert r.error is E.INCONSISTENT_GROUP_PROTOCOL and r.member_id == ""


def test_joining_with_no_protocol_in_common_is_inconsistent():
    h = Harness()
    h.stable_group(1)
    assert h.answer(h.join(protocols=(("roundrobin", b""),))).error is E.INCONSISTENT_GROUP_PROTOCOL


def test_first_join_without_protocols_is_inconsistent():
    h = Harness()
    assert h.answer(h.join(protocols=())).error is E.INCONSISTENT_GROUP_PROTOCOL


def test_known_member_id_for_an_unknown_group_is_unknown_member():
    h = Harness()
    assert h.answer(h.join("ghost")).error is E.UNKNOWN_MEMBER_ID


def test_group_max_size_refuses_the_extra_member():
    h = Harness(GroupConfig(initial_rebalance_delay_ms=DELAY, max_size=2))
    h.stable_group(2)
    r = h.answer(h.join(version=3))
    assert (r.error, r.member_id) == (E.GROUP_MAX_SIZE_REACHED, "")
    assert h.state.state_name("g") == STABLE


# -- the first rebalance ---------------------------------------------------------------------
def test_first_join_waits_the_initial_rebalance_delay():
    h = Harness()
    token, _ = h.join_new()
    assert h.state.next_deadline_ms() == h.now + DELAY
    h.advance(DELAY - 1)
    assert not h.answered(token)
    h.advance(1)
    assert h.answer(token).generation_id == 1
    assert h.state.state_name("g") == COMPLETING_REBALANCE


def test_initial_delay_is_extended_by_new_joins_up_to_the_rebalance_timeout():
    # rebalance timeout 10 s, delay 3 s: windows of 3, 3, 3 and 1 s while members keep coming.
    h = Harness()
    start = h.now
    first, _ = h.join_new(rebalance=10_000)
    for _ in range(3):
        h.join_new(rebalance=10_000)
        h.advance(h.state.next_deadline_ms() - h.now)
        assert not h.answered(first)
    assert h.state.next_deadline_ms() - start == 10_000
    h.join_new(rebalance=10_000)
    h.advance(h.state.next_deadline_ms() - h.now)
    assert h.answered(first) and h.now - start == 10_000


def test_initial_delay_ends_after_one_window_without_new_members():
    h = Harness()
    first, _ = h.join_new()
    h.advance(1_000)
    second, _ = h.join_new()   # extends: the next window starts when this one ends
    h.advance(2_000)
    assert not h.answered(first)
    h.advance(DELAY)
    assert h.answered(first) and h.answered(second)


def test_leader_gets_every_member_with_metadata_of_the_chosen_protocol():
    h = Harness()
    a, a_id = h.join_new(protocols=(("range", b"A-range"), ("rr", b"A-rr")))
    b, b_id = h.join_new(protocols=(("rr", b"B-rr"), ("range", b"B-range")))
    c, c_id = h.join_new(protocols=(("rr", b"C-rr"), ("range", b"C-range"), ("sticky", b"C-s")))
    h.settle()
    leader = h.answer(a)
    assert (leader.leader, leader.protocol_name, leader.protocol_type) == (a_id, "rr", "consumer")
    assert set(leader.members) == {JoinMember(a_id, None, b"A-rr"), JoinMember(b_id, None, b"B-rr"),
                                   JoinMember(c_id, None, b"C-rr")}
    for follower in (b, c):
        r = h.answer(follower)
        assert r.members == () and r.leader == a_id and r.protocol_name == "rr"


def test_protocol_votes_follow_each_members_preference_among_common_protocols():
    h = Harness()
    h.join_new(protocols=(("sticky", b""), ("range", b""), ("rr", b"")))
    h.join_new(protocols=(("range", b""), ("rr", b"")))
    h.join_new(protocols=(("rr", b""), ("range", b"")))
    token, _ = h.join_new(protocols=(("range", b""), ("rr", b"")))
    h.settle()
    assert h.answer(token).protocol_name == "range"  # sticky is not common; range 3 votes, rr 1


# -- SyncGroup ----------------------------------------------------------------------------------
def test_leader_sync_completes_every_parked_sync_and_persists_the_generation():
    h = Harness()
    (_, a_id), (_, b_id) = h.join_new(client="a"), h.join_new(client="b")
    h.settle()
    follower = h.sync(b_id, 1)
    assert not h.answered(follower)
    leader = h.sync(a_id, 1, [(a_id, b"\x00A"), (b_id, b"\xffB")])
    assert h.answer(follower) == SyncResponse(E.NONE, "consumer", "range", b"\xffB")
    assert h.answer(leader) == SyncResponse(E.NONE, "consumer", "range", b"\x00A")
    assert h.state.state_name("g") == STABLE
    [snap] = h.persisted
    assert (snap.group_id, snap.generation_id, snap.protocol_type, snap.protocol_name, snap.leader_id) == \
        ("g", 1, "consumer", "range", a_id)
    assert {m.member_id: (m.subscription, m.assignment, m.client_id) for m in snap.members} == {
        a_id: (b"range-meta", b"\x00A", "a"), b_id: (b"range-meta", b"\xffB", "b")}


def test_members_the_leader_left_out_get_an_empty_assignment():
    h = Harness()
    (_, a_id), (_, b_id) = h.join_new(), h.join_new()
    h.settle()
    follower = h.sync(b_id, 1)
    h.sync(a_id, 1, [(a_id, b"x"), ("stranger", b"y")])
    assert h.answer(follower).assignment == b""
    assert {m.member_id for m in h.persisted[0].members} == {a_id, b_id}


def test_sync_refusals():
    h = Harness()
    (_, a_id), (_, b_id) = h.join_new(), h.join_new()
    h.settle()
    assert h.answer(h.sync(a_id, 2)).error is E.ILLEGAL_GENERATION
    assert h.answer(h.sync("stranger", 1)).error is E.UNKNOWN_MEMBER_ID
    assert h.answer(h.sync(a_id, 1, group="other")).error is E.UNKNOWN_MEMBER_ID
    assert h.answer(h.sync(a_id, 1, ptype="connect")).error is E.INCONSISTENT_GROUP_PROTOCOL
    assert h.answer(h.sync(a_id, 1, pname="rr")).error is E.INCONSISTENT_GROUP_PROTOCOL
    h.join_new()  # a new member: PreparingRebalance
    assert h.answer(h.sync(b_id, 1)).error is E.REBALANCE_IN_PROGRESS


def test_sync_in_a_stable_group_returns_the_current_assignment():
    h = Harness()
    ids = h.stable_group(2)
    r = h.answer(h.sync(ids[1], 1, ptype="consumer", pname="range"))
    assert r == SyncResponse(E.NONE, "consumer", "range", f"assign-{ids[1]}".encode())


def test_sync_timeout_removes_members_that_never_synced_and_rebalances():
    h = Harness()
    _, (_, b_id) = h.join_new(rebalance=5_000), h.join_new(rebalance=5_000)
    h.settle()
    follower = h.sync(b_id, 1)   # the leader never syncs; the sync timer (5 s) beats its session (10 s)
    h.advance(4_999)
    assert not h.answered(follower)
    h.advance(1)
    assert h.answer(follower).error is E.REBALANCE_IN_PROGRESS
    assert h.state.state_name("g") == PREPARING_REBALANCE
    assert [m.member_id for m in h.state.describe("g").members] == [b_id]
    r = h.answer(h.join(b_id, rebalance=5_000))
    assert (r.generation_id, r.leader, r.members) == (2, b_id, (JoinMember(b_id, None, b"range-meta"),))


def test_sync_timer_stops_once_every_member_synced():
    h = Harness()
    (_, a_id), (_, b_id) = h.join_new(rebalance=5_000), h.join_new(rebalance=5_000)
    h.settle()
    h.sync(b_id, 1)
    h.sync(a_id, 1, [(a_id, b"A"), (b_id, b"B")])
    assert h.state.next_deadline_ms() == h.now + SESSION
    h.advance(5_000)
    assert h.state.state_name("g") == STABLE


def test_a_stable_group_removes_a_follower_that_never_synced_when_the_sync_timer_expires():
    h = Harness()
    (_, a_id), (_, b_id) = h.join_new(rebalance=5_000), h.join_new(rebalance=5_000)
    h.settle()
    h.sync(a_id, 1, [(a_id, b"A"), (b_id, b"B")])   # Stable, b has not synced
    h.heartbeat(b_id, 1)
    h.advance(5_000)
    assert h.state.state_name("g") == PREPARING_REBALANCE
    assert [m.member_id for m in h.state.describe("g").members] == [a_id]


# -- rebalances of a stable group ------------------------------------------------------------
def test_new_member_triggers_rebalance_and_completes_when_all_rejoined():
    h = Harness()
    a_id, b_id = h.stable_group(2)
    newcomer, _ = h.join_new(client="c")
    assert h.state.state_name("g") == PREPARING_REBALANCE
    assert h.heartbeat(a_id, 1) is E.REBALANCE_IN_PROGRESS
    assert h.heartbeat(b_id, 1) is E.REBALANCE_IN_PROGRESS
    ra = h.join(a_id)
    assert not h.answered(newcomer)
    rb = h.join(b_id)
    assert all(h.answer(t).generation_id == 2 for t in (newcomer, ra, rb))
    assert len(h.answer(ra).members) == 3   # a stays leader


def test_rebalance_timeout_removes_dynamic_members_that_did_not_rejoin():
    h = Harness()
    a_id, b_id = h.stable_group(2)
    newcomer, new_id = h.join_new(client="c")
    ra = h.join(a_id)
    h.heartbeat(b_id, 1)       # alive but never rejoins
    h.advance(REBALANCE)
    assert h.answer(ra).generation_id == 2 and h.answer(newcomer).generation_id == 2
    assert {m.member_id for m in h.state.describe("g").members} == {a_id, new_id}
    assert h.heartbeat(b_id, 2) is E.UNKNOWN_MEMBER_ID


def test_a_joined_member_becomes_leader_when_the_leader_does_not_rejoin():
    h = Harness()
    a_id, b_id = h.stable_group(2)
    rb = h.join(b_id, protocols=(("range", b"changed"),))   # metadata change: rebalance
    h.heartbeat(a_id, 1)
    h.advance(REBALANCE)
    r = h.answer(rb)
    assert (r.leader, r.generation_id, r.members) == (b_id, 2, (JoinMember(b_id, None, b"changed"),))


def test_follower_rejoining_with_identical_metadata_gets_the_current_generation_without_rebalance():
    h = Harness()
    a_id, b_id = h.stable_group(2)
    r = h.answer(h.join(b_id))
    assert (r.error, r.generation_id, r.leader, r.members, r.member_id) == (E.NONE, 1, a_id, (), b_id)
    assert h.state.state_name("g") == STABLE


def test_follower_rejoining_with_changed_metadata_rebalances():
    h = Harness()
    _, b_id = h.stable_group(2)
    token = h.join(b_id, protocols=(("range", b"new topics"),))
    assert not h.answered(token)
    assert h.state.state_name("g") == PREPARING_REBALANCE


def test_leader_rejoining_with_identical_metadata_rebalances():
    h = Harness()
    a_id, b_id = h.stable_group(2)
    ra = h.join(a_id)
    assert not h.answered(ra) and h.state.state_name("g") == PREPARING_REBALANCE
    rb = h.join(b_id)
    assert h.answer(ra).generation_id == 2 and h.answer(rb).generation_id == 2


def test_identical_rejoin_while_completing_rebalance_returns_the_generation_again():
    h = Harness()
    (_, a_id), _ = h.join_new(), h.join_new()
    h.settle()
    again = h.answer(h.join(a_id))   # the leader lost its JoinGroup answer
    assert again.generation_id == 1 and len(again.members) == 2
    assert h.state.state_name("g") == COMPLETING_REBALANCE


def test_join_during_completing_rebalance_answers_parked_syncs_with_rebalance_in_progress():
    h = Harness()
    _, (_, b_id) = h.join_new(), h.join_new()
    h.settle()
    parked = h.sync(b_id, 1)
    h.join_new(client="late")
    assert h.answer(parked) == SyncResponse(E.REBALANCE_IN_PROGRESS)
    assert h.state.state_name("g") == PREPARING_REBALANCE


def test_cooperative_metadata_and_assignments_pass_through_untouched():
    h = Harness()
    blob = bytes(range(256))
    protocols = (("cooperative-sticky", blob), ("range", b"\x00"))
    (a, a_id), (_, b_id) = h.join_new(protocols=protocols), h.join_new(protocols=protocols)
    h.settle()
    assert {m.metadata for m in h.answer(a).members} == {blob}
    follower = h.sync(b_id, 1)
    h.sync(a_id, 1, [(a_id, blob[::-1]), (b_id, blob * 3)])
    assert h.answer(follower).assignment == blob * 3
    assert h.state.describe("g").members[0].metadata == blob


# -- heartbeats and sessions ---------------------------------------------------------------------
def test_heartbeat_refusals():
    h = Harness()
    a_id, _ = h.stable_group(2)
    assert h.heartbeat(a_id, 1) is E.NONE
    assert h.heartbeat("stranger", 1) is E.UNKNOWN_MEMBER_ID
    assert h.heartbeat(a_id, 1, group="other") is E.UNKNOWN_MEMBER_ID
    assert h.heartbeat(a_id, 0) is E.ILLEGAL_GENERATION


def test_heartbeats_keep_a_member_alive_past_its_session_timeout():
    h = Harness()
    a_id, b_id = h.stable_group(2)
    for _ in range(5):
        h.advance(SESSION - 1)
        assert h.heartbeat(a_id, 1) is E.NONE
        assert h.heartbeat(b_id, 1) is E.NONE
    assert h.state.state_name("g") == STABLE


def test_session_expiry_removes_the_member_and_rebalances_the_rest():
    h = Harness()
    a_id, b_id = h.stable_group(2)
    h.advance(SESSION - 1)
    h.heartbeat(a_id, 1)
    h.advance(1)
    assert h.state.state_name("g") == PREPARING_REBALANCE
    assert h.heartbeat(b_id, 1) is E.UNKNOWN_MEMBER_ID
    r = h.answer(h.join(a_id))
    assert r.generation_id == 2 and [m.member_id for m in r.members] == [a_id]


def test_expiry_of_the_last_member_empties_the_group_and_persists_an_empty_generation():
    h = Harness()
    h.stable_group(1)
    h.persisted.clear()
    h.advance(SESSION)
    assert h.state.state_name("g") == EMPTY
    [snap] = h.persisted
    assert (snap.generation_id, snap.members, snap.protocol_name, snap.leader_id, snap.protocol_type) == \
        (2, (), None, None, "consumer")
    assert h.state.next_deadline_ms() is None


def test_member_awaiting_its_join_answer_is_not_expired_by_its_session():
    h = Harness()
    a_id, b_id = h.stable_group(2)
    ra = h.join(a_id)                  # parked until b rejoins or the rebalance timeout (20 s)
    for _ in range(2):                 # b heartbeats but never rejoins; a sends nothing
        h.advance(SESSION - 1)
        assert h.heartbeat(b_id, 1) is E.REBALANCE_IN_PROGRESS
    assert h.now - 1_000 > SESSION and not h.answered(ra)
    assert a_id in {m.member_id for m in h.state.describe("g").members}
    h.advance(REBALANCE - 2 * (SESSION - 1))
    r = h.answer(ra)
    assert (r.generation_id, r.leader, [m.member_id for m in r.members]) == (2, a_id, [a_id])


def test_new_member_that_never_completes_its_join_expires_after_the_join_timeout():
    h = Harness(GroupConfig(initial_rebalance_delay_ms=DELAY, new_member_join_timeout_ms=5_000))
    h.stable_group(1)
    newcomer, _ = h.join_new(rebalance=60_000)
    h.advance(5_000)
    assert h.answer(newcomer) == JoinResponse(E.UNKNOWN_MEMBER_ID, member_id="")


# -- LeaveGroup ----------------------------------------------------------------------------------
def test_leave_removes_the_member_and_rebalances():
    h = Harness()
    a_id, b_id = h.stable_group(2)
    r = h.leave((b_id, None))
    assert r == LeaveResponse(E.NONE, ((b_id, None, E.NONE),))
    assert h.state.state_name("g") == PREPARING_REBALANCE
    assert h.answer(h.join(a_id)).generation_id == 2


def test_leave_batch_reports_unknown_members_one_by_one():
    h = Harness()
    a_id, b_id = h.stable_group(2)
    r = h.leave((a_id, None), ("stranger", None), (b_id, None))
    assert r.members == ((a_id, None, E.NONE), ("stranger", None, E.UNKNOWN_MEMBER_ID), (b_id, None, E.NONE))
    assert h.state.state_name("g") == EMPTY


def test_leave_of_an_unknown_group_is_unknown_member_per_member():
    h = Harness()
    assert h.leave(("m", None)) == LeaveResponse(E.NONE, (("m", None, E.UNKNOWN_MEMBER_ID),))


def test_last_member_leaving_empties_the_group():
    h = Harness()
    [a_id] = h.stable_group(1)
    h.persisted.clear()
    h.leave((a_id, None))
    assert h.state.state_name("g") == EMPTY and h.persisted[0].generation_id == 2


def test_leave_of_a_pending_member():
    h = Harness()
    pending = h.answer(h.join()).member_id
    assert h.leave((pending, None)).members == ((pending, None, E.NONE),)
    assert h.answer(h.join(pending)).error is E.UNKNOWN_MEMBER_ID


def test_parked_sync_of_a_leaving_member_is_answered_unknown_member():
    h = Harness()
    _, (_, b_id) = h.join_new(), h.join_new()
    h.settle()
    parked = h.sync(b_id, 1)
    h.leave((b_id, None))
    assert h.answer(parked) == SyncResponse(E.UNKNOWN_MEMBER_ID)


def test_parked_join_of_a_leaving_member_is_answered_unknown_member():
    h = Harness()
    _, b_id = h.stable_group(2)
    rb = h.join(b_id, protocols=(("range", b"other"),))
    h.leave((b_id, None))
    assert h.answer(rb) == JoinResponse(E.UNKNOWN_MEMBER_ID, member_id="")


# -- static membership (KIP-345) --------------------------------------------------------------
def static_group(h: Harness, version: int = 5) -> tuple[str, str]:
    ta, tb = h.join(instance="ia", version=version), h.join(instance="ib", version=version)
    h.settle()
    a_id, b_id = h.answer(ta).member_id, h.answer(tb).member_id
    h.sync(b_id, 1, instance="ib")
    h.sync(a_id, 1, [(a_id, b"A"), (b_id, b"B")], instance="ia")
    return a_id, b_id


def test_static_member_with_another_member_id_is_fenced_everywhere():
    h = Harness()
    a_id, _ = static_group(h)
    assert h.heartbeat("impostor", 1, instance="ia") is E.FENCED_INSTANCE_ID
    assert h.answer(h.sync("impostor", 1, instance="ia")).error is E.FENCED_INSTANCE_ID
    assert h.answer(h.join("impostor", instance="ia")).error is E.FENCED_INSTANCE_ID
    assert h.state.validate_offset_commit("g", "impostor", 1, "ia", h.now) is E.FENCED_INSTANCE_ID
    assert h.heartbeat(a_id, 1, instance="unknown-instance") is E.UNKNOWN_MEMBER_ID


def test_restarted_static_follower_takes_over_without_rebalance_and_old_id_is_fenced():
    h = Harness()
    a_id, b_id = static_group(h)
    h.persisted.clear()
    r = h.answer(h.join(instance="ib"))
    assert r.error is E.NONE and r.member_id != b_id and r.member_id.startswith("ib-")
    assert (r.generation_id, r.leader, r.members) == (1, a_id, ())
    assert h.state.state_name("g") == STABLE
    assert {m.member_id for m in h.persisted[0].members} == {a_id, r.member_id}
    assert h.heartbeat(b_id, 1, instance="ib") is E.FENCED_INSTANCE_ID
    assert h.heartbeat(b_id, 1) is E.UNKNOWN_MEMBER_ID
    assert h.answer(h.sync(r.member_id, 1, instance="ib")).assignment == b"B"


def test_restarted_static_leader_before_v9_is_told_the_old_leader_id():
    h = Harness()
    a_id, _ = static_group(h)
    h.persisted.clear()
    r = h.answer(h.join(instance="ia", version=8))
    assert r.member_id != a_id and r.member_id.startswith("ia-")
    assert (r.leader, r.members, r.skip_assignment) == (a_id, (), False)   # so it does not assign
    assert h.persisted[0].leader_id == r.member_id                         # yet it is the leader


def test_restarted_static_leader_from_v9_leads_but_skips_assignment():
    h = Harness()
    static_group(h)
    r = h.answer(h.join(instance="ia", version=9))
    assert (r.leader, r.skip_assignment, len(r.members)) == (r.member_id, True, 2)
    assert h.state.state_name("g") == STABLE


def test_static_member_replaced_while_its_sync_is_parked_is_fenced_and_the_group_rebalances():
    h = Harness()
    h.join(instance="ia")
    tb = h.join(instance="ib")
    h.settle()
    b_id = h.answer(tb).member_id
    parked = h.sync(b_id, 1, instance="ib")
    h.join(instance="ib")
    assert h.answer(parked) == SyncResponse(E.FENCED_INSTANCE_ID)
    assert h.state.state_name("g") == PREPARING_REBALANCE


def test_static_members_that_miss_the_rebalance_stay_in_the_group():
    h = Harness()
    a_id, b_id = static_group(h)
    ra = h.join(a_id, instance="ia", protocols=(("range", b"v2"),))
    for _ in range(4):   # b stays alive (REBALANCE_IN_PROGRESS) but never rejoins
        assert h.heartbeat(b_id, 1, instance="ib") is E.REBALANCE_IN_PROGRESS
        h.advance(REBALANCE // 4)
    r = h.answer(ra)
    assert r.generation_id == 2 and {m.member_id for m in r.members} == {a_id, b_id}


def test_admin_removes_a_static_member_by_instance_id():
    h = Harness()
    _, b_id = static_group(h)
    assert h.leave(("", "ib")).members == (("", "ib", E.NONE),)
    assert h.leave(("", "ib")).members == (("", "ib", E.UNKNOWN_MEMBER_ID),)
    assert b_id not in {m.member_id for m in h.state.describe("g").members}


def test_a_static_member_that_rejoined_leads_when_the_static_leader_did_not():
    h = Harness()
    a_id, b_id = static_group(h)
    rb = h.join(b_id, instance="ib", protocols=(("range", b"v2"),))
    for _ in range(4):
        h.heartbeat(a_id, 1, instance="ia")
        h.advance(REBALANCE // 4)
    r = h.answer(rb)
    assert (r.generation_id, r.leader, len(r.members)) == (2, b_id, 2)


def test_static_member_replaced_while_its_join_is_parked_is_fenced():
    h = Harness()
    a_id, b_id = static_group(h)
    parked = h.join(b_id, instance="ib", protocols=(("range", b"v2"),))
    replacement = h.join(instance="ib")
    assert h.answer(parked) == JoinResponse(E.FENCED_INSTANCE_ID, member_id=b_id)
    h.join(a_id, instance="ia")
    r = h.answer(replacement)
    assert r.generation_id == 2 and r.member_id.startswith("ib-") and r.member_id != b_id


def test_rebalance_waits_another_timeout_when_no_static_member_rejoined():
    h = Harness()
    a_id, _ = static_group(h)
    h.leave(("", "ib"))
    for _ in range(4):
        assert h.heartbeat(a_id, 1, instance="ia") is E.REBALANCE_IN_PROGRESS
        h.advance(REBALANCE // 4)
    assert h.state.state_name("g") == PREPARING_REBALANCE      # static a stays; no generation 2 yet
    assert h.heartbeat(a_id, 1, instance="ia") is E.REBALANCE_IN_PROGRESS
    r = h.answer(h.join(a_id, instance="ia"))
    assert (r.generation_id, r.leader) == (2, a_id)


# -- OffsetCommit validation ------------------------------------------------------------------
def test_simple_consumer_commit_to_an_unknown_group_is_allowed_and_creates_it_empty():
    h = Harness()
    assert h.state.validate_offset_commit("simple", "", -1, None, h.now) is E.NONE
    assert h.state.list_groups(None) == [("simple", "", EMPTY)]
    assert h.state.validate_offset_commit("simple", "", -1, None, h.now) is E.NONE
    assert h.state.validate_offset_commit("simple", "m", 0, None, h.now) is E.UNKNOWN_MEMBER_ID
    assert h.state.validate_offset_commit("other", "", 3, None, h.now) is E.ILLEGAL_GENERATION


def test_offset_commit_refusals():
    h = Harness()
    a_id, b_id = h.stable_group(2)
    v = h.state.validate_offset_commit
    assert v("g", a_id, 1, None, h.now) is E.NONE
    assert v("g", "stranger", 1, None, h.now) is E.UNKNOWN_MEMBER_ID
    assert v("g", a_id, 7, None, h.now) is E.ILLEGAL_GENERATION
    assert v("g", "", -1, None, h.now) is E.UNKNOWN_MEMBER_ID   # only members commit to a live group
    h.join_new(client="late")
    assert v("g", a_id, 1, None, h.now) is E.NONE               # allowed while PreparingRebalance
    h.join(a_id), h.join(b_id)
    assert h.state.state_name("g") == COMPLETING_REBALANCE
    assert v("g", a_id, 2, None, h.now) is E.REBALANCE_IN_PROGRESS


def test_offset_commit_counts_as_a_heartbeat():
    h = Harness()
    a_id, b_id = h.stable_group(2)
    for _ in range(3):
        h.advance(SESSION - 1)
        assert h.state.validate_offset_commit("g", a_id, 1, None, h.now) is E.NONE
        h.heartbeat(b_id, 1)
    assert h.state.state_name("g") == STABLE


# -- administration --------------------------------------------------------------------------
def test_list_groups_with_and_without_a_state_filter():
    h = Harness()
    h.stable_group(1)
    h.state.validate_offset_commit("simple", "", -1, None, h.now)
    assert sorted(h.state.list_groups(None)) == [("g", "consumer", STABLE), ("simple", "", EMPTY)]
    assert h.state.list_groups({"stable"}) == [("g", "consumer", STABLE)]
    assert h.state.list_groups({"Dead"}) == []


def test_describe_shows_metadata_and_assignments_only_when_stable():
    h = Harness()
    (_, a_id), (_, b_id) = h.join_new(client="a"), h.join_new(client="b")
    h.settle()
    d = h.state.describe("g")
    assert (d.state, d.protocol_type, d.protocol_name) == (COMPLETING_REBALANCE, "consumer", "")
    assert {(m.metadata, m.assignment) for m in d.members} == {(b"", b"")}
    h.sync(a_id, 1, [(a_id, b"A"), (b_id, b"B")])
    d = h.state.describe("g")
    assert (d.error, d.state, d.protocol_name) == (E.NONE, STABLE, "range")
    by_id = {m.member_id: m for m in d.members}
    assert (by_id[a_id].client_id, by_id[a_id].client_host, by_id[a_id].metadata, by_id[a_id].assignment) == \
        ("a", "/10.0.0.1", b"range-meta", b"A")


def test_unknown_group_is_described_as_dead():
    h = Harness()
    d = h.state.describe("nope")
    assert (d.error, d.state, d.members) == (E.NONE, DEAD, ())
    assert h.state.state_name("nope") == DEAD and h.state.is_empty_or_absent("nope")


def test_delete_groups():
    h = Harness()
    h.stable_group(1)
    h.state.validate_offset_commit("simple", "", -1, None, h.now)
    assert h.state.delete_groups(["g", "simple", "nope"], h.now) == {
        "g": E.NON_EMPTY_GROUP, "simple": E.NONE, "nope": E.GROUP_ID_NOT_FOUND}
    assert h.state.group_ids() == ["g"] and not h.state.is_empty_or_absent("g")


# -- coordinator takeover ------------------------------------------------------------------------
def snapshot(members=("m1", "m2"), protocol="range") -> GroupSnapshot:
    return GroupSnapshot("g", "consumer", 4, protocol, members[0] if members else None, 123, tuple(
        MemberSnapshot(m, None, "cid", "/h", REBALANCE, SESSION, b"sub-" + m.encode(), b"as-" + m.encode())
        for m in members))


def test_loaded_group_is_stable_and_answers_its_members():
    h = Harness()
    h.state.load(snapshot(), h.now)
    assert h.state.state_name("g") == STABLE
    assert h.heartbeat("m2", 4) is E.NONE
    assert h.answer(h.sync("m2", 4)) == SyncResponse(E.NONE, "consumer", "range", b"as-m2")
    r = h.answer(h.join("m2", protocols=(("range", b"sub-m2"),)))
    assert (r.generation_id, r.leader) == (4, "m1")


def test_loaded_members_get_a_fresh_session_and_expire_without_heartbeats():
    h = Harness()
    h.state.load(snapshot(), h.now)
    assert h.state.next_deadline_ms() == h.now + SESSION
    h.advance(SESSION)
    assert h.state.state_name("g") == EMPTY
    assert h.persisted[-1].generation_id == 5


def test_loaded_empty_group_is_empty_and_keeps_its_generation():
    h = Harness()
    h.state.load(snapshot(members=(), protocol=None), h.now)
    assert h.state.state_name("g") == EMPTY and h.state.is_empty_or_absent("g")
    token = h.join(version=3)
    h.advance(DELAY)
    assert h.answer(token).generation_id == 5


def test_unload_answers_parked_requests_not_coordinator_and_forgets_the_group():
    h = Harness()
    a_id, _ = h.stable_group(2)
    parked = h.join(a_id)
    out = h.state.unload(["g", "unknown"])
    assert out.completions == [(parked, JoinResponse(E.NOT_COORDINATOR, member_id=a_id))]
    assert h.state.group_ids() == [] and h.state.next_deadline_ms() is None


def test_unload_answers_parked_syncs_not_coordinator():
    h = Harness()
    _, (_, b_id) = h.join_new(), h.join_new()
    h.settle()
    parked = h.sync(b_id, 1)
    assert h.state.unload(["g"]).completions == [(parked, SyncResponse(E.NOT_COORDINATOR))]


# -- timers ------------------------------------------------------------------------------------
def test_next_deadline_is_none_when_idle_and_tracks_the_earliest_timer():
    h = Harness()
    assert h.state.next_deadline_ms() is None
    h.join_new()
    assert h.state.next_deadline_ms() == h.now + DELAY
    h.advance(DELAY)                                   # sync timer and the session both armed
    assert h.state.next_deadline_ms() == h.now + SESSION


def test_tick_before_any_deadline_does_nothing():
    h = Harness()
    token, _ = h.join_new()
    out = h.state.tick(h.now + DELAY - 1)
    assert out.completions == [] and out.persist == [] and not h.answered(token)


def test_a_superseded_join_of_the_same_member_is_answered_not_dropped():
    h = Harness()
    a_id, b_id = h.stable_group(2)
    first = h.join(b_id, protocols=(("range", b"x"),))
    second = h.join(b_id, protocols=(("range", b"x"),))
    assert h.answer(first).error is E.REBALANCE_IN_PROGRESS and not h.answered(second)
    h.join(a_id)
    assert h.answer(second).generation_id == 2


def test_loading_a_group_already_cached_keeps_the_cached_one():
    h = Harness()
    h.stable_group(1)
    h.state.load(snapshot(), h.now)
    assert "m1" not in {m.member_id for m in h.state.describe("g").members}
