"""Kafka 3.9's classic consumer-group state machine (GroupCoordinator, GroupMetadata,
MemberMetadata and the DelayedJoin/DelayedSync/DelayedHeartbeat purgatory entries), as a pure
class: no Ray, no asyncio, no sockets, no clock. Every method takes `now_ms`.

Kafka answers JoinGroup and SyncGroup asynchronously (a join waits for the rebalance, a
follower's sync for the leader's). Here the caller names each request with a `token` and every
call returns an `Outcome`: the (token, response) pairs ready now, which may answer requests of
earlier calls, and the group metadata to write to `__consumer_offsets` before sending them.
A deferred request is simply absent from the outcome until a later call or `tick` answers it.

States and transitions (Kafka's names):

    Empty --join--> PreparingRebalance --all joined / rebalance timeout--> CompletingRebalance
    CompletingRebalance --leader's SyncGroup--> Stable
    Stable / CompletingRebalance --join, leave, member failure--> PreparingRebalance
    PreparingRebalance --every member gone--> Empty;   deleted or unloaded --> Dead (removed)

Timers, each fired by `tick` once due (`next_deadline_ms` says when):
- heartbeat: a member's session (last heartbeat + session timeout; new members get the
  new-member join timeout instead). A member awaiting a JoinGroup or SyncGroup answer is not
  expired: its rebalance or sync timer covers it, and it is rescheduled when answered.
- pending: a member id handed out with MEMBER_ID_REQUIRED expires after the session timeout.
- join: InitialDelayedJoin (Empty group; `group.initial.rebalance.delay.ms`, extended while new
  members join in generation 0, up to the rebalance timeout) or DelayedJoin (completes early
  when every member rejoined; at the rebalance timeout, dynamic members that did not rejoin
  are removed).
- sync: DelayedSync: members that sent no SyncGroup within the rebalance timeout of a new
  generation are removed and the group rebalances.

Departures from Kafka: the group metadata in `persist` is assumed written (Kafka undoes a
failed write of a leader's assignment or of a static member's new id; the host cannot report one
here); a JoinGroup or SyncGroup superseded by the same member's next one is answered
REBALANCE_IN_PROGRESS, and a SyncGroup parked by a member that leaves UNKNOWN_MEMBER_ID (Kafka
drops both unanswered); a static member replaced before its SyncGroup keeps its place in the
pending-sync set under the new id (Kafka keeps the old id there, which forces a rebalance when
the sync timer expires); ties in protocol votes go to the protocol voted first.

Not safe for concurrent use: the host serialises calls.
"""
from __future__ import annotations

import heapq
import itertools
import logging
import uuid
from collections import Counter
from dataclasses import dataclass, field

from rafka.common.errors import ErrorCode
from rafka.coordinator.group.group_messages import NO_GENERATION, UNKNOWN_MEMBER_ID, GroupSnapshot, MemberSnapshot

log = logging.getLogger(__name__)

EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"
# PreparingRebalance.validPreviousStates: where `maybePrepareRebalance` starts a rebalance.
_CAN_REBALANCE = frozenset({EMPTY, STABLE, COMPLETING_REBALANCE})

# Timer kinds; a timer's key is (group_id, kind, member_id), member_id "" for group timers.
_HEARTBEAT, _PENDING, _JOIN, _SYNC = "heartbeat", "pending", "join", "sync"

Protocols = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class GroupConfig:
    min_session_timeout_ms: int = 6000           # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000      # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3000       # group.initial.rebalance.delay.ms
    max_size: int = 2**31 - 1                    # group.max.size
    new_member_join_timeout_ms: int = 300_000    # GroupCoordinator.NewMemberJoinTimeoutMs (fixed in Kafka)


# -- requests and responses (fields as in the Kafka APIs) ---------------------------------
@dataclass(frozen=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    client_id: str
    client_host: str
    api_version: int
    reason: str | None = None


@dataclass(frozen=True)
class JoinMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinResponse:
    error: ErrorCode
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = ""
    members: tuple[JoinMember, ...] = ()     # only the leader gets them


@dataclass(frozen=True)
class SyncRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class SyncResponse:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None


@dataclass(frozen=True)
class HeartbeatResponse:
    error: ErrorCode


@dataclass(frozen=True)
class LeaveRequest:
    group_id: str
    members: tuple[tuple[str, str | None], ...]     # (member_id, group_instance_id)


@dataclass(frozen=True)
class LeaveResponse:
    error: ErrorCode
    members: tuple[tuple[str, str | None, ErrorCode], ...]


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupDescription:
    error: ErrorCode
    state: str
    protocol_type: str
    protocol_name: str
    members: tuple[MemberDescription, ...] = ()


@dataclass
class Outcome:
    """What a call produced: write `persist` first, then send every completion."""

    completions: list[tuple[int, object]] = field(default_factory=list)
    persist: list[GroupSnapshot] = field(default_factory=list)

    def reply(self, token: int, response: object) -> None:
        self.completions.append((token, response))


# -- members and groups ---------------------------------------------------------------------
@dataclass(eq=False)
class Member:
    """MemberMetadata: protocols in the member's order of preference; the pending JoinGroup
    and SyncGroup (Kafka's awaiting callbacks) as tokens."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    join_token: int | None = None
    sync_token: int | None = None
    is_new: bool = False     # joined but not yet part of a generation: expires at the join timeout

    @property
    def awaiting_join(self) -> bool:
        return self.join_token is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_token is not None

    def metadata(self, protocol: str) -> bytes:
        return next((meta for name, meta in self.protocols if name == protocol), b"")

    def matches(self, protocols: Protocols) -> bool:
        """Same protocols, same order, same metadata bytes."""
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        return next(name for name, _ in self.protocols if name in candidates)


class Group:
    """GroupMetadata. Invariants: `static_members` maps each member's instance id to its member
    id; `leader_id` is a member (or None when there are none); pending members (ids handed out
    with MEMBER_ID_REQUIRED) are not members yet."""

    def __init__(self, group_id: str, now_ms: int, state: str = EMPTY) -> None:
        self.group_id = group_id
        self.state = state
        self.state_timestamp_ms = now_ms
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}
        self.pending_members: set[str] = set()
        self.pending_sync: set[str] = set()
        self.new_member_added = False                     # extends the InitialDelayedJoin
        self.initial_delay: tuple[int, int] | None = None  # (delay_ms, remaining_ms) of an InitialDelayedJoin
        self.sync_generation = NO_GENERATION              # generation the DelayedSync watches

    def transition(self, state: str, now_ms: int) -> None:
        self.state = state
        self.state_timestamp_ms = now_ms

    def add(self, member: Member) -> None:
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync.discard(member_id)
        return member

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        return member

    def num_awaiting_join(self) -> int:
        return sum(m.awaiting_join for m in self.members.values())

    def has_all_members_joined(self) -> bool:
        return self.num_awaiting_join() == len(self.members) and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def candidate_protocols(self) -> set[str] | None:
        """Protocols every member supports; None (any) when there are no members."""
        names = [{name for name, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*names) if names else None

    def supports_protocols(self, protocol_type: str, names: set[str]) -> bool:
        if self.state == EMPTY:
            return bool(protocol_type) and bool(names)
        candidates = self.candidate_protocols()
        return self.protocol_type == protocol_type and (candidates is None or bool(names & candidates))

    def select_protocol(self) -> str:
        """The candidate with the most votes; each member votes for its most preferred candidate.
        Ties go to the protocol voted first in member order (Kafka leaves them to a HashMap)."""
        candidates = self.candidate_protocols() or set()
        return Counter(m.vote(candidates) for m in self.members.values()).most_common(1)[0][0]

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else pick any member that did; False when none did."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].awaiting_join:
            return True
        joined = next((m.member_id for m in self.members.values() if m.awaiting_join), None)
        if joined is None:
            return False
        self.leader_id = joined
        return True

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition(COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition(EMPTY, now_ms)
        self.pending_sync.clear()

    def member_list(self) -> tuple[JoinMember, ...]:
        """The members and their metadata for the chosen protocol, for the leader."""
        return tuple(JoinMember(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
                     for m in self.members.values())

    def snapshot(self, assignments: dict[str, bytes]) -> GroupSnapshot:
        """GroupMetadataValue as Kafka's `storeGroup` writes it."""
        return GroupSnapshot(
            group_id=self.group_id, protocol_type=self.protocol_type or "", generation_id=self.generation_id,
            protocol_name=self.protocol_name, leader_id=self.leader_id,
            current_state_timestamp_ms=self.state_timestamp_ms,
            members=tuple(MemberSnapshot(
                m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                m.session_timeout_ms, m.metadata(self.protocol_name) if self.protocol_name else b"",
                assignments.get(m.member_id, b"")) for m in self.members.values()))


class _Timers:
    """Deadlines by key; scheduling a key again replaces its deadline. A heap with lazy
    deletion: an entry counts only while it is its key's live one."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, tuple[str, str, str]]] = []
        self._live: dict[tuple[str, str, str], int] = {}
        self._seq = itertools.count()

    def schedule(self, key: tuple[str, str, str], deadline_ms: int) -> None:
        seq = next(self._seq)
        self._live[key] = seq
        heapq.heappush(self._heap, (deadline_ms, seq, key))

    def cancel(self, key: tuple[str, str, str]) -> None:
        self._live.pop(key, None)

    def cancel_group(self, group_id: str) -> None:
        for key in [k for k in self._live if k[0] == group_id]:
            del self._live[key]

    def mark(self) -> int:
        """A sequence number: timers scheduled after it are newer."""
        return next(self._seq)

    def next_deadline(self) -> int | None:
        self._drop_dead()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int, older_than: int) -> tuple[str, str, str] | None:
        """The earliest due key scheduled before `older_than` (so a tick cannot loop on timers
        it schedules itself), removed; None if there is none."""
        held, found = [], None
        self._drop_dead()
        while self._heap and self._heap[0][0] <= now_ms:
            entry = heapq.heappop(self._heap)
            if entry[1] >= older_than:
                held.append(entry)
            else:
                del self._live[entry[2]]
                found = entry[2]
                break
            self._drop_dead()
        for entry in held:
            heapq.heappush(self._heap, entry)
        return found

    def _drop_dead(self) -> None:
        while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
            heapq.heappop(self._heap)


class GroupCoordinatorState:
    """All classic groups of one coordinator, and their timers."""

    def __init__(self, config: GroupConfig = GroupConfig()) -> None:
        self.config = config
        self._groups: dict[str, Group] = {}
        self._timers = _Timers()

    # -- JoinGroup ------------------------------------------------------------------------
    def join(self, token: int, req: JoinRequest, now_ms: int) -> Outcome:
        out = Outcome()
        if not req.group_id:
            out.reply(token, JoinResponse(ErrorCode.INVALID_GROUP_ID, member_id=req.member_id))
            return out
        if not self.config.min_session_timeout_ms <= req.session_timeout_ms <= self.config.max_session_timeout_ms:
            out.reply(token, JoinResponse(ErrorCode.INVALID_SESSION_TIMEOUT, member_id=req.member_id))
            return out
        group = self._groups.get(req.group_id)
        if group is None:
            if req.member_id != UNKNOWN_MEMBER_ID:  # a known member of a group we do not have
                out.reply(token, JoinResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id=req.member_id))
                return out
            group = self._groups[req.group_id] = Group(req.group_id, now_ms)
        protocols = tuple((name, bytes(meta)) for name, meta in req.protocols)
        if not self._accept_joining_member(group, req.member_id):
            self._drop_member(group, req.member_id, out)
            out.reply(token, JoinResponse(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id=UNKNOWN_MEMBER_ID))
        elif req.member_id == UNKNOWN_MEMBER_ID:
            self._join_new_member(group, token, req, protocols, now_ms, out)
        else:
            self._join_current_member(group, token, req, protocols, now_ms, out)
        self._maybe_complete_join(group, now_ms, out)
        return out

    def _accept_joining_member(self, group: Group, member_id: str) -> bool:
        """Room for the member? A rebalance counts members that rejoined, so the last ones to
        rejoin a group over a lowered group.max.size are the ones turned away."""
        if group.state == EMPTY:
            return True
        member = group.members.get(member_id)
        if group.state == PREPARING_REBALANCE:
            return (member is not None and member.awaiting_join) or group.num_awaiting_join() < self.config.max_size
        return member is not None or len(group.members) < self.config.max_size

    def _join_new_member(self, group: Group, token: int, req: JoinRequest, protocols: Protocols,
                         now_ms: int, out: Outcome) -> None:
        if not group.supports_protocols(req.protocol_type, {name for name, _ in protocols}):
            out.reply(token, JoinResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=UNKNOWN_MEMBER_ID))
            return
        new_id = f"{req.group_instance_id or req.client_id}-{uuid.uuid4()}"
        if req.group_instance_id is not None and req.group_instance_id in group.static_members:
            old_id = group.static_members[req.group_instance_id]
            self._replace_static_member(group, token, req, protocols, old_id, new_id, now_ms, out)
        elif req.group_instance_id is None and req.api_version >= 4:
            # KIP-394: a v4+ dynamic member first learns its id, and joins with it.
            group.pending_members.add(new_id)
            self._timers.schedule((group.group_id, _PENDING, new_id), now_ms + req.session_timeout_ms)
            out.reply(token, JoinResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id))
        else:
            self._add_member_and_rebalance(group, token, req, protocols, new_id, now_ms, out)

    def _join_current_member(self, group: Group, token: int, req: JoinRequest, protocols: Protocols,
                             now_ms: int, out: Outcome) -> None:
        member_id = req.member_id
        if not group.supports_protocols(req.protocol_type, {name for name, _ in protocols}):
            out.reply(token, JoinResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id))
        elif member_id in group.pending_members:
            if req.group_instance_id is not None:  # Kafka: IllegalStateException
                out.reply(token, JoinResponse(ErrorCode.UNKNOWN_SERVER_ERROR, member_id=member_id))
            else:
                self._add_member_and_rebalance(group, token, req, protocols, member_id, now_ms, out)
        elif (error := self._validate_member(group, member_id, req.group_instance_id)) is not None:
            out.reply(token, JoinResponse(error, member_id=member_id))
        elif group.state == PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, group.members[member_id], token, req, protocols, now_ms, out)
        elif group.state == COMPLETING_REBALANCE:
            member = group.members[member_id]
            if member.matches(protocols):  # the JoinGroup answer was lost: send it again
                out.reply(token, self._generation_response(group, member_id, group.leader_id == member_id))
            else:
                self._update_member_and_rebalance(group, member, token, req, protocols, now_ms, out)
        elif group.state == STABLE:
            member = group.members[member_id]
            if group.leader_id == member_id or not member.matches(protocols):
                # A leader's JoinGroup always rebalances: it may have seen a metadata change.
                self._update_member_and_rebalance(group, member, token, req, protocols, now_ms, out)
            else:
                out.reply(token, self._generation_response(group, member_id, False))
        else:
            out.reply(token, JoinResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))

    def _add_member_and_rebalance(self, group: Group, token: int, req: JoinRequest, protocols: Protocols,
                                  member_id: str, now_ms: int, out: Outcome) -> None:
        member = Member(member_id, req.group_instance_id, req.client_id, req.client_host, req.rebalance_timeout_ms,
                        req.session_timeout_ms, req.protocol_type, protocols, join_token=token, is_new=True)
        if group.state == PREPARING_REBALANCE and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        self._timers.cancel((group.group_id, _PENDING, member_id))
        # A new member cannot heartbeat while its JoinGroup is parked; a client that gave up and
        # retried would leave it behind, so it expires after the new-member join timeout.
        self._schedule_expiration(group, member, now_ms, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance(group, now_ms, out, f"adding new member {member_id}")

    def _update_member(self, member: Member, token: int, req: JoinRequest, protocols: Protocols,
                       out: Outcome) -> None:
        member.protocols = protocols
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        if member.join_token is not None:  # superseded: Kafka drops it unanswered
            out.reply(member.join_token, JoinResponse(ErrorCode.REBALANCE_IN_PROGRESS, member_id=member.member_id))
        member.join_token = token

    def _update_member_and_rebalance(self, group: Group, member: Member, token: int, req: JoinRequest,
                                     protocols: Protocols, now_ms: int, out: Outcome) -> None:
        self._update_member(member, token, req, protocols, out)
        self._maybe_prepare_rebalance(group, now_ms, out, f"member {member.member_id} joining in {group.state}")

    def _replace_static_member(self, group: Group, token: int, req: JoinRequest, protocols: Protocols,
                               old_id: str, new_id: str, now_ms: int, out: Outcome) -> None:
        """KIP-345: a static member that restarted takes over its instance id under a new member
        id; the old id is fenced. A Stable group keeps its generation when the chosen protocol
        does not change."""
        previous_leader = group.leader_id
        old = group.members[old_id]
        if old.join_token is not None:
            out.reply(old.join_token, JoinResponse(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
            old.join_token = None
        if old.sync_token is not None:
            out.reply(old.sync_token, SyncResponse(ErrorCode.FENCED_INSTANCE_ID))
            old.sync_token = None
        self._timers.cancel((group.group_id, _HEARTBEAT, old_id))
        member = group.replace_static_member(req.group_instance_id, old_id, new_id)
        if old_id in group.pending_sync:
            group.pending_sync.discard(old_id)
            group.pending_sync.add(new_id)
        self._schedule_expiration(group, member, now_ms, member.session_timeout_ms)
        self._update_member(member, token, req, protocols, out)
        if group.state == STABLE:
            if group.protocol_name == group.select_protocol():
                out.persist.append(group.snapshot({m.member_id: m.assignment for m in group.members.values()}))
                if req.api_version >= 9:
                    # KIP-814: a static leader learns it leads but skips the assignment.
                    is_leader = group.leader_id == new_id
                    response = self._generation_response(group, new_id, is_leader, skip_assignment=is_leader)
                else:
                    # Older clients: name the previous leader id, so a returning leader does not
                    # assign (a Stable group would not pass its assignment on).
                    response = self._generation_response(group, new_id, False, leader=previous_leader)
                self._answer_join(member, response, out)
            else:
                self._maybe_prepare_rebalance(group, now_ms, out, f"static member {new_id} changes the protocol")
        elif group.state == COMPLETING_REBALANCE:
            # The leader may be assigning to the old member id: start over.
            self._prepare_rebalance(group, now_ms, out, f"static member {new_id} replaced {old_id}")

    # -- the rebalance ----------------------------------------------------------------------
    def _maybe_prepare_rebalance(self, group: Group, now_ms: int, out: Outcome, reason: str) -> None:
        if group.state in _CAN_REBALANCE:
            self._prepare_rebalance(group, now_ms, out, reason)

    def _prepare_rebalance(self, group: Group, now_ms: int, out: Outcome, reason: str) -> None:
        if group.state == COMPLETING_REBALANCE:
            self._propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS, now_ms, out)
        group.pending_sync.clear()
        self._timers.cancel((group.group_id, _SYNC, ""))
        if group.state == EMPTY:
            delay = self.config.initial_rebalance_delay_ms
            group.initial_delay = (delay, max(group.rebalance_timeout_ms() - delay, 0))
        else:
            delay = group.rebalance_timeout_ms()
            group.initial_delay = None
        log.info("Preparing to rebalance group %s in state %s with old generation %d (reason: %s)",
                 group.group_id, group.state, group.generation_id, reason)
        group.transition(PREPARING_REBALANCE, now_ms)
        self._timers.schedule((group.group_id, _JOIN, ""), now_ms + delay)
        self._maybe_complete_join(group, now_ms, out)

    def _maybe_complete_join(self, group: Group, now_ms: int, out: Outcome) -> None:
        """DelayedJoin.tryComplete: done once every member rejoined. An InitialDelayedJoin
        only completes when it expires."""
        if group.state == PREPARING_REBALANCE and group.initial_delay is None and group.has_all_members_joined():
            self._complete_join(group, now_ms, out)

    def _on_join_expired(self, group: Group, now_ms: int, out: Outcome) -> None:
        if group.initial_delay is not None:
            delay_ms, remaining_ms = group.initial_delay
            if group.new_member_added and remaining_ms != 0:
                group.new_member_added = False
                next_delay = min(self.config.initial_rebalance_delay_ms, remaining_ms)
                group.initial_delay = (next_delay, max(remaining_ms - delay_ms, 0))
                self._timers.schedule((group.group_id, _JOIN, ""), now_ms + next_delay)
                return
        self._complete_join(group, now_ms, out)

    def _complete_join(self, group: Group, now_ms: int, out: Outcome) -> None:
        """GroupCoordinator.onCompleteJoin: drop dynamic members that did not rejoin, then start
        the next generation (or wait another rebalance timeout if nobody rejoined)."""
        self._timers.cancel((group.group_id, _JOIN, ""))
        group.initial_delay = None
        for member in [m for m in group.members.values() if not m.awaiting_join and m.group_instance_id is None]:
            log.info("Group %s removes member %s, which did not rejoin", group.group_id, member.member_id)
            self._drop_member(group, member.member_id, out)
        if not group.maybe_elect_new_joined_leader() and group.members:
            log.error("Group %s could not complete rebalance because no members rejoined", group.group_id)
            self._timers.schedule((group.group_id, _JOIN, ""), now_ms + group.rebalance_timeout_ms())
            return
        group.init_next_generation(now_ms)
        if group.state == EMPTY:
            log.info("Group %s with generation %d is now empty", group.group_id, group.generation_id)
            out.persist.append(group.snapshot({}))
            return
        log.info("Stabilized group %s generation %d with %d members", group.group_id, group.generation_id,
                 len(group.members))
        for member in group.members.values():
            self._answer_join(member, self._generation_response(
                group, member.member_id, group.leader_id == member.member_id), out)
            self._schedule_expiration(group, member, now_ms, member.session_timeout_ms)
            member.is_new = False
            group.pending_sync.add(member.member_id)
        group.sync_generation = group.generation_id
        self._timers.schedule((group.group_id, _SYNC, ""), now_ms + group.rebalance_timeout_ms())

    def _on_sync_expired(self, group: Group, now_ms: int, out: Outcome) -> None:
        """DelayedSync expired: members that sent no SyncGroup are removed, and the rest rebalance."""
        if group.sync_generation != group.generation_id or group.state not in (COMPLETING_REBALANCE, STABLE):
            return
        if group.pending_sync:
            missing = sorted(group.pending_sync)
            for member_id in missing:
                self._drop_member(group, member_id, out)
            self._prepare_rebalance(group, now_ms, out, f"members {missing} sent no SyncGroup in time")

    def _generation_response(self, group: Group, member_id: str, with_members: bool, *,
                             leader: str | None = None, skip_assignment: bool = False) -> JoinResponse:
        return JoinResponse(
            ErrorCode.NONE, generation_id=group.generation_id, protocol_type=group.protocol_type,
            protocol_name=group.protocol_name, leader=(group.leader_id if leader is None else leader) or "",
            skip_assignment=skip_assignment, member_id=member_id,
            members=group.member_list() if with_members else ())

    # -- SyncGroup --------------------------------------------------------------------------
    def sync(self, token: int, req: SyncRequest, now_ms: int) -> Outcome:
        out = Outcome()
        group = self._groups.get(req.group_id)
        error = self._validate_sync(group, req)  # an Empty group has no members to pass it
        if error is None and group.state == PREPARING_REBALANCE:
            error = ErrorCode.REBALANCE_IN_PROGRESS
        if error is not None:
            out.reply(token, SyncResponse(error))
            return out
        member = group.members[req.member_id]
        group.pending_sync.discard(member.member_id)
        if not group.pending_sync:
            self._timers.cancel((group.group_id, _SYNC, ""))  # DelayedSync completes
        if group.state == STABLE:
            out.reply(token, SyncResponse(ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment))
            self._schedule_expiration(group, member, now_ms, member.session_timeout_ms)
            return out
        if member.sync_token is not None:  # superseded: Kafka drops it unanswered
            out.reply(member.sync_token, SyncResponse(ErrorCode.REBALANCE_IN_PROGRESS))
        member.sync_token = token
        if group.leader_id == member.member_id:
            given = dict(req.assignments)
            assignments = {member_id: bytes(given.get(member_id, b"")) for member_id in group.members}
            log.info("Assignment received from leader %s for group %s for generation %d", member.member_id,
                     group.group_id, group.generation_id)
            out.persist.append(group.snapshot(assignments))
            for m in group.members.values():
                m.assignment = assignments[m.member_id]
            self._propagate_assignment(group, ErrorCode.NONE, now_ms, out)
            group.transition(STABLE, now_ms)
        return out

    def _validate_sync(self, group: Group | None, req: SyncRequest) -> ErrorCode | None:
        error = self._validate_generation_member(req.group_id, group, req.member_id, req.group_instance_id,
                                                 req.generation_id)
        if error is not None:
            return error
        assert group is not None
        if req.protocol_type is not None and req.protocol_type != group.protocol_type:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if req.protocol_name is not None and req.protocol_name != group.protocol_name:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return None

    def _propagate_assignment(self, group: Group, error: ErrorCode, now_ms: int, out: Outcome) -> None:
        """Answer every parked SyncGroup; each answered member's session restarts, since its
        heartbeat timer may have lapsed while it waited."""
        for member in group.members.values():
            if member.sync_token is None:
                continue
            if error is ErrorCode.NONE:
                response = SyncResponse(error, group.protocol_type, group.protocol_name, member.assignment)
            else:
                response = SyncResponse(error)
            out.reply(member.sync_token, response)
            member.sync_token = None
            self._schedule_expiration(group, member, now_ms, member.session_timeout_ms)

    def _propagate_assignment_error(self, group: Group, error: ErrorCode, now_ms: int, out: Outcome) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error, now_ms, out)

    # -- Heartbeat ------------------------------------------------------------------------
    def heartbeat(self, token: int, req: HeartbeatRequest, now_ms: int) -> Outcome:
        out = Outcome()
        out.reply(token, HeartbeatResponse(self._heartbeat_error(req, now_ms)))
        return out

    def _heartbeat_error(self, req: HeartbeatRequest, now_ms: int) -> ErrorCode:
        group = self._groups.get(req.group_id)
        error = self._validate_generation_member(req.group_id, group, req.member_id, req.group_instance_id,
                                                 req.generation_id)
        if error is not None:
            return error
        assert group is not None
        member = group.members[req.member_id]
        self._schedule_expiration(group, member, now_ms, member.session_timeout_ms)
        return ErrorCode.REBALANCE_IN_PROGRESS if group.state == PREPARING_REBALANCE else ErrorCode.NONE

    # -- LeaveGroup -----------------------------------------------------------------------
    def leave(self, token: int, req: LeaveRequest, now_ms: int) -> Outcome:
        out = Outcome()
        if not req.group_id:
            out.reply(token, LeaveResponse(ErrorCode.INVALID_GROUP_ID, ()))
            return out
        group = self._groups.get(req.group_id)
        results = []
        for member_id, instance_id in req.members:
            error = ErrorCode.UNKNOWN_MEMBER_ID if group is None else \
                self._leave_one(group, member_id, instance_id, now_ms, out)
            results.append((member_id, instance_id, error))
        out.reply(token, LeaveResponse(ErrorCode.NONE, tuple(results)))
        return out

    def _leave_one(self, group: Group, member_id: str, instance_id: str | None, now_ms: int,
                   out: Outcome) -> ErrorCode:
        if member_id == UNKNOWN_MEMBER_ID:
            # KIP-345: an administrator removes a static member by its instance id alone.
            current = group.static_members.get(instance_id) if instance_id is not None else None
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            self._remove_member_and_update_group(group, group.members[current], now_ms, out)
            return ErrorCode.NONE
        if member_id in group.pending_members:
            self._remove_pending_member(group, member_id, now_ms, out)
            return ErrorCode.NONE
        error = self._validate_member(group, member_id, instance_id)
        if error is not None:
            return error
        log.info("Member %s has left group %s through explicit LeaveGroup", member_id, group.group_id)
        self._remove_member_and_update_group(group, group.members[member_id], now_ms, out)
        return ErrorCode.NONE

    # -- removing members -------------------------------------------------------------------
    def _remove_member_and_update_group(self, group: Group, member: Member, now_ms: int, out: Outcome) -> None:
        if member.join_token is not None:  # a new member may time out with its JoinGroup parked
            out.reply(member.join_token, JoinResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id=UNKNOWN_MEMBER_ID))
            member.join_token = None
        self._drop_member(group, member.member_id, out)
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, now_ms, out, f"removing member {member.member_id}")
        else:
            self._maybe_complete_join(group, now_ms, out)

    def _remove_pending_member(self, group: Group, member_id: str, now_ms: int, out: Outcome) -> None:
        group.pending_members.discard(member_id)
        self._timers.cancel((group.group_id, _PENDING, member_id))
        self._maybe_complete_join(group, now_ms, out)

    def _drop_member(self, group: Group, member_id: str, out: Outcome) -> None:
        """Remove a member (or pending member) and its timers. A SyncGroup it left parked (it
        left while CompletingRebalance) is answered UNKNOWN_MEMBER_ID, not dropped as in Kafka."""
        member = group.remove(member_id)
        self._timers.cancel((group.group_id, _HEARTBEAT, member_id))
        self._timers.cancel((group.group_id, _PENDING, member_id))
        if member is not None and member.sync_token is not None:
            out.reply(member.sync_token, SyncResponse(ErrorCode.UNKNOWN_MEMBER_ID))
            member.sync_token = None

    def _schedule_expiration(self, group: Group, member: Member, now_ms: int, timeout_ms: int) -> None:
        self._timers.schedule((group.group_id, _HEARTBEAT, member.member_id), now_ms + timeout_ms)

    def _on_heartbeat_expired(self, group: Group, member_id: str, now_ms: int, out: Outcome) -> None:
        member = group.members.get(member_id)
        if member is None:
            return
        # MemberMetadata.hasSatisfiedHeartbeat: a member waiting for its JoinGroup or SyncGroup
        # answer is alive unless it is new (not yet in a generation).
        if member.is_new or not (member.awaiting_join or member.awaiting_sync):
            log.info("Member %s in group %s has failed, removing it from the group", member_id, group.group_id)
            self._remove_member_and_update_group(group, member, now_ms, out)

    def _on_pending_expired(self, group: Group, member_id: str, now_ms: int, out: Outcome) -> None:
        if member_id in group.pending_members:
            log.info("Pending member %s in group %s has been removed after session timeout expiration",
                     member_id, group.group_id)
            self._remove_pending_member(group, member_id, now_ms, out)

    def _answer_join(self, member: Member, response: JoinResponse, out: Outcome) -> None:
        if member.join_token is not None:
            out.reply(member.join_token, response)
            member.join_token = None

    def _validate_generation_member(self, group_id: str, group: Group | None, member_id: str,
                                    instance_id: str | None, generation_id: int) -> ErrorCode | None:
        """The checks SyncGroup and Heartbeat share: a group id, a known (unfenced) member, and
        the group's current generation."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        error = self._validate_member(group, member_id, instance_id)
        if error is not None:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return None

    @staticmethod
    def _validate_member(group: Group, member_id: str, instance_id: str | None) -> ErrorCode | None:
        """A static member's instance id must map to `member_id`; the member must exist."""
        if instance_id is not None:
            current = group.static_members.get(instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        return None if member_id in group.members else ErrorCode.UNKNOWN_MEMBER_ID

    # -- timers -----------------------------------------------------------------------------
    def next_deadline_ms(self) -> int | None:
        """When `tick` next has something to do; None when no timer is set."""
        return self._timers.next_deadline()

    def tick(self, now_ms: int) -> Outcome:
        """Fire every timer due at `now_ms`, earliest first. Timers that firing schedules are
        left for the next tick, even if already due."""
        out = Outcome()
        older_than = self._timers.mark()
        while (key := self._timers.pop_due(now_ms, older_than)) is not None:
            group_id, kind, member_id = key
            group = self._groups.get(group_id)
            if group is None:
                continue
            if kind == _HEARTBEAT:
                self._on_heartbeat_expired(group, member_id, now_ms, out)
            elif kind == _PENDING:
                self._on_pending_expired(group, member_id, now_ms, out)
            elif kind == _JOIN:
                self._on_join_expired(group, now_ms, out)
            else:
                self._on_sync_expired(group, now_ms, out)
        return out

    # -- offsets ----------------------------------------------------------------------------
    def validate_offset_commit(self, group_id: str, member_id: str, generation_id: int,
                               group_instance_id: str | None, now_ms: int) -> ErrorCode:
        """OffsetCommit of the classic protocol (Kafka's validateOffsetCommit). Generation -1 to an
        unknown or Empty group is a simple (standalone) consumer's commit: allowed, and an unknown
        group is created Empty, as Kafka does. A valid member's commit counts as a heartbeat."""
        group = self._groups.get(group_id)
        if group is None:
            if generation_id >= 0:  # a member of an older generation, or a group we lost
                return ErrorCode.ILLEGAL_GENERATION
            self._groups[group_id] = Group(group_id, now_ms)
            return ErrorCode.NONE
        if generation_id < 0 and group.state == EMPTY:
            return ErrorCode.NONE
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or group_instance_id is not None:
            error = self._validate_member(group, member_id, group_instance_id)
            if error is None and generation_id != group.generation_id:
                error = ErrorCode.ILLEGAL_GENERATION
            if error is not None:
                return error
        elif group.state != EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID  # only members commit to a group with members
        if group.state == COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        if group.state in (STABLE, PREPARING_REBALANCE):
            member = group.members[member_id]
            self._schedule_expiration(group, member, now_ms, member.session_timeout_ms)
        return ErrorCode.NONE

    # -- administration ---------------------------------------------------------------------
    def list_groups(self, states_filter: set[str] | None = None) -> list[tuple[str, str, str]]:
        """(group_id, protocol_type, state); the filter compares state names case-insensitively."""
        wanted = {s.lower() for s in states_filter} if states_filter else None
        return [(g.group_id, g.protocol_type or "", g.state) for g in self._groups.values()
                if wanted is None or g.state.lower() in wanted]

    def describe(self, group_id: str) -> GroupDescription:
        """Kafka's GroupSummary: metadata and assignments only when Stable; an unknown group is
        described as Dead with no members (error NONE)."""
        group = self._groups.get(group_id)
        if group is None:
            return GroupDescription(ErrorCode.NONE, DEAD, "", "")
        stable = group.state == STABLE
        members = tuple(MemberDescription(
            m.member_id, m.group_instance_id, m.client_id, m.client_host,
            m.metadata(group.protocol_name) if stable else b"", m.assignment if stable else b"")
            for m in group.members.values())
        return GroupDescription(ErrorCode.NONE, group.state, group.protocol_type or "",
                                (group.protocol_name or "") if stable else "", members)

    def delete_groups(self, group_ids: list[str], now_ms: int) -> dict[str, ErrorCode]:
        """Delete Empty groups (they become Dead and are forgotten); the host deletes their
        offsets. Also how the host forgets an Empty group whose last offset expired."""
        results = {}
        for group_id in group_ids:
            group = self._groups.get(group_id)
            if group is None:
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif group.state != EMPTY:
                results[group_id] = ErrorCode.NON_EMPTY_GROUP
            else:
                self._forget(group)
                results[group_id] = ErrorCode.NONE
        return results

    def is_empty_or_absent(self, group_id: str) -> bool:
        group = self._groups.get(group_id)
        return group is None or group.state == EMPTY

    def state_name(self, group_id: str) -> str:
        group = self._groups.get(group_id)
        return DEAD if group is None else group.state

    def group_ids(self) -> list[str]:
        return list(self._groups)

    # -- coordinator takeover -----------------------------------------------------------------
    def load(self, snapshot: GroupSnapshot, now_ms: int) -> None:
        """Restore a group from its last GroupMetadataValue: Stable with its members, each with a
        fresh session, or Empty. A group already present is kept (Kafka keeps the cached one).
        A group over group.max.size starts a rebalance at once, as Kafka does."""
        if snapshot.group_id in self._groups:
            return
        timestamp = snapshot.current_state_timestamp_ms if snapshot.current_state_timestamp_ms >= 0 else now_ms
        group = Group(snapshot.group_id, timestamp)
        group.protocol_type = snapshot.protocol_type or None
        group.generation_id = snapshot.generation_id
        protocol = snapshot.protocol_name
        for ms in snapshot.members if protocol is not None else ():
            group.add(Member(ms.member_id, ms.group_instance_id, ms.client_id, ms.client_host,
                             ms.rebalance_timeout_ms, ms.session_timeout_ms, snapshot.protocol_type,
                             ((protocol, ms.subscription),), assignment=ms.assignment))
        if group.members:
            group.state, group.protocol_name = STABLE, protocol
            if snapshot.leader_id in group.members:
                group.leader_id = snapshot.leader_id
        self._groups[group.group_id] = group
        if len(group.members) > self.config.max_size:
            self._prepare_rebalance(group, now_ms, Outcome(), "freshly loaded group is over capacity")
        for member in group.members.values():
            self._schedule_expiration(group, member, now_ms, member.session_timeout_ms)

    def unload(self, group_ids: list[str]) -> Outcome:
        """Forget groups this coordinator no longer owns; parked requests get NOT_COORDINATOR."""
        out = Outcome()
        for group_id in group_ids:
            group = self._groups.get(group_id)
            if group is None:
                continue
            for member in group.members.values():
                if member.join_token is not None:
                    out.reply(member.join_token, JoinResponse(ErrorCode.NOT_COORDINATOR, member_id=member.member_id))
                    member.join_token = None
                if member.sync_token is not None:
                    out.reply(member.sync_token, SyncResponse(ErrorCode.NOT_COORDINATOR))
                    member.sync_token = None
            self._forget(group)
        return out

    def _forget(self, group: Group) -> None:
        """The group is Dead: drop it and its timers."""
        self._timers.cancel_group(group.group_id)
        del self._groups[group.group_id]
