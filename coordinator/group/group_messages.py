"""Values shared by the group coordinator's pure parts (state machine, offsets, the records of
`__consumer_offsets`) and its host: the state machine's requests and responses, what it keeps
of groups and offsets, and the `Outcome` each of its calls returns. Frozen, cheap to pickle;
no logic (an `Outcome` is filled in by the call that returns it).

Names and meanings follow Kafka 3.9's classic group protocol (`GroupMetadata`,
`MemberMetadata`, `OffsetAndMetadata`) and the `GroupMetadataValue`/`OffsetCommitValue`
record schemas.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rafka.common.errors import ErrorCode

NO_GENERATION = -1
UNKNOWN_MEMBER_ID = ""
NO_LEADER_EPOCH = -1
NO_EXPIRE_TIMESTAMP = -1

Protocols = tuple[tuple[str, bytes], ...]   # (name, metadata) in order of preference


@dataclass(frozen=True)
class MemberSnapshot:
    """One member as `GroupMetadataValue.MemberMetadata` stores it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes          # the metadata of the group's chosen protocol
    assignment: bytes


@dataclass(frozen=True)
class GroupSnapshot:
    """What `__consumer_offsets` keeps of a group (GroupMetadataValue): written when a
    generation completes (the leader's SyncGroup) and when the group empties; an empty
    generation with no members and protocol None is how Kafka records an Empty group."""

    group_id: str
    protocol_type: str
    generation_id: int
    protocol_name: str | None
    leader_id: str | None
    current_state_timestamp_ms: int
    members: tuple[MemberSnapshot, ...] = ()


@dataclass(frozen=True)
class CommittedOffset:
    """One committed offset (OffsetAndMetadata / OffsetCommitValue)."""

    offset: int
    leader_epoch: int = NO_LEADER_EPOCH
    metadata: str = ""
    commit_timestamp_ms: int = 0
    expire_timestamp_ms: int = NO_EXPIRE_TIMESTAMP   # only v1 records carry one


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
