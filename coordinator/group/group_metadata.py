"""A classic group's metadata, as Kafka's GroupMetadata and MemberMetadata keep it: the state
names, `GroupConfig`, `Member`, `Group` (with the operations that keep its invariants) and
`Timers`, the deadline heap that holds the state machine's DelayedJoin/DelayedSync/
DelayedHeartbeat entries. Which transition happens when is decided in `group_state` and
`group_rebalance`; this module only holds and updates what they decide.
"""
from __future__ import annotations

import heapq
import itertools
from collections import Counter
from dataclasses import dataclass

from rafka.coordinator.group.group_messages import (
    NO_GENERATION, GroupSnapshot, JoinMember, MemberSnapshot, Protocols,
)

EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"

# Timer kinds; a timer's key is (group_id, kind, member_id), member_id "" for group timers.
HEARTBEAT_TIMER, PENDING_TIMER, JOIN_TIMER, SYNC_TIMER = "heartbeat", "pending", "join", "sync"


@dataclass(frozen=True)
class GroupConfig:
    min_session_timeout_ms: int = 6000           # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000      # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3000       # group.initial.rebalance.delay.ms
    max_size: int = 2**31 - 1                    # group.max.size
    new_member_join_timeout_ms: int = 300_000    # GroupCoordinator.NewMemberJoinTimeoutMs (fixed in Kafka)


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


class Timers:
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

