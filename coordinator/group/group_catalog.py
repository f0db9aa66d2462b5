"""The groups of one coordinator as the rest of the broker sees them, outside the member
protocol: `GroupCatalog` validates offset commits (Kafka's validateOffsetCommit), lists,
describes and deletes groups, and loads them from `__consumer_offsets` when the coordinator
takes a partition over or unloads them when it moves away. `group_state.GroupCoordinatorState`
inherits it.
"""
from __future__ import annotations

from rafka.common.errors import ErrorCode
from rafka.coordinator.group.group_messages import (
    UNKNOWN_MEMBER_ID, GroupDescription, GroupSnapshot, JoinResponse, MemberDescription, Outcome, SyncResponse,
)
from rafka.coordinator.group.group_metadata import (
    COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE, Group, Member,
)
from rafka.coordinator.group.group_rebalance import GroupRebalance


class GroupCatalog(GroupRebalance):
    """Offset-commit validation, the administrative queries, and loading and unloading groups."""

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

    def validate_txn_offset_commit(self, group_id: str, member_id: str, generation_id: int,
                                   group_instance_id: str | None, now_ms: int) -> ErrorCode:
        """TxnOffsetCommit (Kafka's doTxnCommitOffsets; KIP-447 fences zombies by the member and
        generation a v3+ request carries): an unknown group is created Empty; a static member
        of another member id is FENCED_INSTANCE_ID, an unknown member UNKNOWN_MEMBER_ID, another
        generation ILLEGAL_GENERATION. Member "" and generation -1 (v0-2) skip those checks."""
        group = self._groups.get(group_id)
        if group is None:
            group = self._groups[group_id] = Group(group_id, now_ms)
        if group.state == DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group_instance_id is not None:
            current = group.static_members.get(group_instance_id)
            if current is not None and current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id != UNKNOWN_MEMBER_ID and member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id >= 0 and generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
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
