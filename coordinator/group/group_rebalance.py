"""The rebalance of Kafka's classic group protocol and the timers that drive it (the
DelayedJoin, DelayedSync and DelayedHeartbeat purgatory entries): `GroupRebalance`, the base of
`group_state.GroupCoordinatorState`, holds the groups and their timers, prepares and completes
rebalances, removes members, checks a member against its group for the requests, and fires due
timers in `tick`.

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
"""
from __future__ import annotations

import logging

from rafka.common.errors import ErrorCode
from rafka.coordinator.group.group_messages import UNKNOWN_MEMBER_ID, JoinResponse, Outcome, SyncResponse
from rafka.coordinator.group.group_metadata import (
    COMPLETING_REBALANCE, EMPTY, HEARTBEAT_TIMER, JOIN_TIMER, PENDING_TIMER, PREPARING_REBALANCE, STABLE,
    SYNC_TIMER, Group, GroupConfig, Member, Timers,
)

log = logging.getLogger(__name__)

# PreparingRebalance.validPreviousStates: where `maybePrepareRebalance` starts a rebalance.
_CAN_REBALANCE = frozenset({EMPTY, STABLE, COMPLETING_REBALANCE})


class GroupRebalance:
    """All classic groups of one coordinator and their timers, with what the requests and `tick`
    share: the rebalance, removing members, checking a member, firing due timers."""

    def __init__(self, config: GroupConfig = GroupConfig()) -> None:
        self.config = config
        self._groups: dict[str, Group] = {}
        self._timers = Timers()

    # -- the rebalance ----------------------------------------------------------------------
    def _maybe_prepare_rebalance(self, group: Group, now_ms: int, out: Outcome, reason: str) -> None:
        if group.state in _CAN_REBALANCE:
            self._prepare_rebalance(group, now_ms, out, reason)

    def _prepare_rebalance(self, group: Group, now_ms: int, out: Outcome, reason: str) -> None:
        if group.state == COMPLETING_REBALANCE:
            self._propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS, now_ms, out)
        group.pending_sync.clear()
        self._timers.cancel((group.group_id, SYNC_TIMER, ""))
        if group.state == EMPTY:
            delay = self.config.initial_rebalance_delay_ms
            group.initial_delay = (delay, max(group.rebalance_timeout_ms() - delay, 0))
        else:
            delay = group.rebalance_timeout_ms()
            group.initial_delay = None
        log.info("Preparing to rebalance group %s in state %s with old generation %d (reason: %s)",
                 group.group_id, group.state, group.generation_id, reason)
        group.transition(PREPARING_REBALANCE, now_ms)
        self._timers.schedule((group.group_id, JOIN_TIMER, ""), now_ms + delay)
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
                self._timers.schedule((group.group_id, JOIN_TIMER, ""), now_ms + next_delay)
                return
        self._complete_join(group, now_ms, out)

    def _complete_join(self, group: Group, now_ms: int, out: Outcome) -> None:
        """GroupCoordinator.onCompleteJoin: drop dynamic members that did not rejoin, then start
        the next generation (or wait another rebalance timeout if nobody rejoined)."""
        self._timers.cancel((group.group_id, JOIN_TIMER, ""))
        group.initial_delay = None
        for member in [m for m in group.members.values() if not m.awaiting_join and m.group_instance_id is None]:
            log.info("Group %s removes member %s, which did not rejoin", group.group_id, member.member_id)
            self._drop_member(group, member.member_id, out)
        if not group.maybe_elect_new_joined_leader() and group.members:
            log.error("Group %s could not complete rebalance because no members rejoined", group.group_id)
            self._timers.schedule((group.group_id, JOIN_TIMER, ""), now_ms + group.rebalance_timeout_ms())
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
        self._timers.schedule((group.group_id, SYNC_TIMER, ""), now_ms + group.rebalance_timeout_ms())

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
        self._timers.cancel((group.group_id, PENDING_TIMER, member_id))
        self._maybe_complete_join(group, now_ms, out)

    def _drop_member(self, group: Group, member_id: str, out: Outcome) -> None:
        """Remove a member (or pending member) and its timers. A SyncGroup it left parked (it
        left while CompletingRebalance) is answered UNKNOWN_MEMBER_ID, not dropped as in Kafka."""
        member = group.remove(member_id)
        self._timers.cancel((group.group_id, HEARTBEAT_TIMER, member_id))
        self._timers.cancel((group.group_id, PENDING_TIMER, member_id))
        if member is not None and member.sync_token is not None:
            out.reply(member.sync_token, SyncResponse(ErrorCode.UNKNOWN_MEMBER_ID))
            member.sync_token = None

    def _schedule_expiration(self, group: Group, member: Member, now_ms: int, timeout_ms: int) -> None:
        self._timers.schedule((group.group_id, HEARTBEAT_TIMER, member.member_id), now_ms + timeout_ms)

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
            if kind == HEARTBEAT_TIMER:
                self._on_heartbeat_expired(group, member_id, now_ms, out)
            elif kind == PENDING_TIMER:
                self._on_pending_expired(group, member_id, now_ms, out)
            elif kind == JOIN_TIMER:
                self._on_join_expired(group, now_ms, out)
            else:
                self._on_sync_expired(group, now_ms, out)
        return out

