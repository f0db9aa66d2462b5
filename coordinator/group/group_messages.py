"""Values shared by the group coordinator's pure parts (state machine, offsets, the records of
`__consumer_offsets`) and its host. Frozen, cheap to pickle; no logic.

Names and meanings follow Kafka 3.9's classic group protocol (`GroupMetadata`,
`MemberMetadata`, `OffsetAndMetadata`) and the `GroupMetadataValue`/`OffsetCommitValue`
record schemas.
"""
from __future__ import annotations

from dataclasses import dataclass

NO_GENERATION = -1
UNKNOWN_MEMBER_ID = ""
NO_LEADER_EPOCH = -1
NO_EXPIRE_TIMESTAMP = -1


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
