"""Kafka 3.9's classic consumer-group state machine (GroupCoordinator, GroupMetadata,
MemberMetadata and the DelayedJoin/DelayedSync/DelayedHeartbeat purgatory entries), as a pure
class: no Ray, no asyncio, no sockets, no clock. Every method takes `now_ms`.

This module's job is `GroupCoordinatorState` and its answers to the member requests: JoinGroup,
SyncGroup, Heartbeat and LeaveGroup. Beneath it: the values exchanged with it are in
`group_messages`, a group's and a member's metadata and the timer heap in `group_metadata`, the
rebalance and its timers in `group_rebalance`, and offset-commit validation, the administrative
queries and loading/unloading in `group_catalog` (the last two are the classes it inherits).

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

Departures from Kafka: a failed write of the group metadata in `persist` is reported by the
host through `metadata_not_stored`, which forgets the assignment and rebalances (Kafka also
restores a replaced static member's old id); a JoinGroup or SyncGroup superseded by the same member's next one is answered
REBALANCE_IN_PROGRESS, and a SyncGroup parked by a member that leaves UNKNOWN_MEMBER_ID (Kafka
drops both unanswered); a static member replaced before its SyncGroup keeps its place in the
pending-sync set under the new id (Kafka keeps the old id there, which forces a rebalance when
the sync timer expires); ties in protocol votes go to the protocol voted first.

Not safe for concurrent use: the host serialises calls.
"""
from __future__ import annotations

import logging
import uuid

from rafka.common.errors import ErrorCode
from rafka.coordinator.group.group_catalog import GroupCatalog
from rafka.coordinator.group.group_messages import (
    UNKNOWN_MEMBER_ID, HeartbeatRequest, HeartbeatResponse, JoinRequest, JoinResponse, LeaveRequest, LeaveResponse,
    Outcome, Protocols, SyncRequest, SyncResponse,
)
from rafka.coordinator.group.group_metadata import (
    COMPLETING_REBALANCE, EMPTY, HEARTBEAT_TIMER, PENDING_TIMER, PREPARING_REBALANCE, STABLE, SYNC_TIMER, Group,
    Member,
)

log = logging.getLogger(__name__)


class GroupCoordinatorState(GroupCatalog):
    """All classic groups of one coordinator, and their timers: the member requests here, the
    rest inherited from `GroupCatalog` and `GroupRebalance`."""

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
            self._timers.schedule((group.group_id, PENDING_TIMER, new_id), now_ms + req.session_timeout_ms)
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
        self._timers.cancel((group.group_id, PENDING_TIMER, member_id))
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
        self._timers.cancel((group.group_id, HEARTBEAT_TIMER, old_id))
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
            self._timers.cancel((group.group_id, SYNC_TIMER, ""))  # DelayedSync completes
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

    def metadata_not_stored(self, group_id: str, generation_id: int, now_ms: int) -> Outcome:
        """The host could not write the group's metadata of `generation_id` (the leader's
        assignment, or a static member's new id): as Kafka's `resetAndPropagateAssignmentError`
        and `maybePrepareRebalance`, forget the assignment and rebalance. The host answers the
        requests that waited on the write with the write's error itself. A group that has moved
        on to another generation meanwhile, or is Empty, is left alone."""
        out = Outcome()
        group = self._groups.get(group_id)
        if group is None or group.generation_id != generation_id or group.state not in (STABLE, COMPLETING_REBALANCE):
            return out  # moved on, or Empty (nothing assigned; a rebalance of nobody would write again)
        self._propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS, now_ms, out)
        self._maybe_prepare_rebalance(group, now_ms, out, "error when storing the group's metadata")
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
