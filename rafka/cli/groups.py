"""`rafka groups`: list, describe, reset the offsets of and delete consumer groups, like
Kafka's kafka-consumer-groups.sh, over the Kafka protocol of any broker."""
from __future__ import annotations

import argparse
import json
import struct
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any, Callable

from rafka.common.errors import ErrorCode
from rafka.cli.output import admin_command, print_table
from rafka.net.client import KafkaConnection
from rafka.net.protocol import apis

# API keys, from the registry of the protocol tables.
FIND_COORDINATOR, LIST_GROUPS, DESCRIBE_GROUPS, DELETE_GROUPS = (
    apis.FIND_COORDINATOR.key, apis.LIST_GROUPS.key, apis.DESCRIBE_GROUPS.key, apis.DELETE_GROUPS.key)
OFFSET_FETCH, OFFSET_COMMIT, LIST_OFFSETS, METADATA = (
    apis.OFFSET_FETCH.key, apis.OFFSET_COMMIT.key, apis.LIST_OFFSETS.key, apis.METADATA.key)
EARLIEST, LATEST = -2, -1
INACTIVE_STATES = ("Empty", "Dead")


class GroupsError(Exception):
    """A refusal worth one line on stderr and exit code 1; `code` is Kafka's error, where one was answered."""

    def __init__(self, message: str, code: int = ErrorCode.UNKNOWN_SERVER_ERROR) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)


# Coordinator errors a client retries (the group is loading, or its coordinator is elsewhere).
RETRIABLE_COORDINATOR_ERRORS = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                          ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})


# Partition errors a client retries after looking the leader up again.
RETRIABLE_PARTITION_ERRORS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
                                        ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.KAFKA_STORAGE_ERROR,
                                        ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH})


class _Retriable(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


@dataclass(frozen=True)
class PartitionLag:
    group: str
    topic: str
    partition: int
    current_offset: int | None
    log_end_offset: int
    lag: int | None
    consumer_id: str
    host: str
    client_id: str


# -- pure helpers ---------------------------------------------------------------------------
def parse_consumer_assignment(data: bytes) -> dict[str, list[int]]:
    """Topics and partitions of a ConsumerProtocolAssignment (version, [topic, [partition]], user data)."""
    if not data or len(data) < 6:
        return {}
    pos = 2
    (count,) = struct.unpack_from(">i", data, pos)
    pos += 4
    out: dict[str, list[int]] = {}
    for _ in range(max(count, 0)):
        (size,) = struct.unpack_from(">h", data, pos)
        topic = data[pos + 2:pos + 2 + size].decode()
        pos += 2 + size
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        out[topic] = list(struct.unpack_from(f">{n}i", data, pos))
        pos += 4 * n
    return out


def plan_reset(partitions: list[tuple[str, int]], mode: str, value: Any, committed: dict, earliest: dict,
               latest: dict, at_time: dict | None = None) -> dict[tuple[str, int], int]:
    """New offset per partition for a reset, clamped to [earliest, latest] as Kafka does.

    mode: to-earliest, to-latest, to-offset (value N), shift-by (value N, from the committed
    offset, or the latest when nothing is committed), to-datetime (offsets looked up by the
    caller in `at_time`; the latest when no record is that new)."""
    plan = {}
    for tp in partitions:
        low, high = earliest[tp], latest[tp]
        if mode == "to-earliest":
            target = low
        elif mode == "to-latest":
            target = high
        elif mode == "to-offset":
            target = int(value)
        elif mode == "shift-by":
            base = committed.get(tp)
            target = (base if base is not None and base >= 0 else high) + int(value)
        elif mode == "to-datetime":
            found = (at_time or {}).get(tp, -1)
            target = found if found >= 0 else high
        else:
            raise ValueError(f"unknown reset mode {mode}")
        plan[tp] = min(max(target, low), high)
    return plan


def parse_datetime_ms(text: str) -> int:
    """Milliseconds since the epoch of an ISO-8601 time (UTC when it names no zone)."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


# -- protocol -------------------------------------------------------------------------------
class GroupAdmin:
    """The requests behind the subcommands, over `KafkaConnection`s to the right brokers."""

    def __init__(self, bootstrap: str, retry_timeout_s: float = 30.0) -> None:
        self.bootstrap = bootstrap
        self._conns: dict[str, KafkaConnection] = {}
        self._retry_timeout_s = retry_timeout_s

    def close(self) -> None:
        for c in self._conns.values():
            c.close()

    def _conn(self, address: str) -> KafkaConnection:
        if address not in self._conns:
            self._conns[address] = KafkaConnection.to(address, client_id="rafka-groups")
        return self._conns[address]

    def _metadata(self, topics: list[str] | None = None) -> dict:
        body = {"topics": None if topics is None else [{"topic_id": None, "name": t} for t in topics],
                "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
        return self._conn(self.bootstrap).request(METADATA, 12, body)

    def brokers(self) -> list[str]:
        return [f"{b['host']}:{b['port']}" for b in self._metadata([])["brokers"]]

    def coordinator(self, group: str) -> KafkaConnection:
        body = self._conn(self.bootstrap).request(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
        c = body["coordinators"][0]
        if c["error_code"] != 0:
            raise _Retriable(c["error_code"]) if c["error_code"] in RETRIABLE_COORDINATOR_ERRORS else GroupsError(
                f"Cannot find the coordinator of group '{group}': {ErrorCode(c['error_code']).name}", c["error_code"])
        return self._conn(f"{c['host']}:{c['port']}")

    def _ask_coordinator(self, group: str, api_key: int, version: int, body: dict,
                         errors: Callable[[dict], list[int]]) -> dict:
        """The coordinator's answer to a group request. While the coordinator is being found,
        is loading the group (after a restart or a leadership move) or moved, the request is
        tried again, with backoff, for up to the retry timeout, as Kafka's admin client does;
        then the last answer is returned (the caller reports its error)."""
        deadline = time.monotonic() + self._retry_timeout_s
        backoff_s = 0.1
        while True:
            answer: dict | None = None
            try:
                answer = self.coordinator(group).request(api_key, version, body)
                if not any(e in RETRIABLE_COORDINATOR_ERRORS for e in errors(answer)):
                    return answer
            except _Retriable as e:
                not_found = e.code
            if time.monotonic() + backoff_s > deadline:
                if answer is None:
                    raise GroupsError(f"Cannot find the coordinator of group '{group}': {ErrorCode(not_found).name}",
                                      not_found)
                return answer
            time.sleep(backoff_s)
            backoff_s = min(backoff_s * 2, 1.0)

    def list_groups(self) -> list[dict]:
        groups = []
        for address in self.brokers():
            body = self._conn(address).request(LIST_GROUPS, 4, {"states_filter": []})
            groups += [{"group": g["group_id"], "protocol_type": g["protocol_type"], "state": g["group_state"]}
                       for g in body["groups"]]
        return sorted(groups, key=lambda g: g["group"])

    def describe(self, group: str) -> dict:
        body = self._ask_coordinator(group, DESCRIBE_GROUPS, 5, {"groups": [group],
                                                                "include_authorized_operations": False},
                                     lambda b: [g["error_code"] for g in b["groups"]])
        g = body["groups"][0]
        if g["error_code"] != 0:
            raise GroupsError(f"Cannot describe group '{group}': {ErrorCode(g['error_code']).name}", g["error_code"])
        return g

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        body = self._ask_coordinator(group, OFFSET_FETCH, 8, {"groups": [{"group_id": group, "topics": None}],
                                                              "require_stable": False},
                                     lambda b: [g["error_code"] for g in b["groups"]])
        found = body["groups"][0]
        if found["error_code"] != 0:
            raise GroupsError(f"Cannot fetch offsets of group '{group}': {ErrorCode(found['error_code']).name}",
                              found["error_code"])
        return {(t["name"], p["partition_index"]): p["committed_offset"] for t in found["topics"]
                for p in t["partitions"]}

    def partitions(self, topic: str) -> list[tuple[str, int]]:
        meta = self._metadata([topic])
        t = meta["topics"][0]
        if t["error_code"] != 0:
            raise GroupsError(f"Topic '{topic}': {ErrorCode(t['error_code']).name}", t["error_code"])
        return sorted((topic, p["partition_index"]) for p in t["partitions"])

    def offsets_at(self, partitions: list[tuple[str, int]], timestamp: int) -> dict[tuple[str, int], int]:
        """ListOffsets for each partition at its leader: EARLIEST, LATEST or a time. While a
        partition has no leader or its leader is moving or still starting, its leader is looked
        up again and asked again, with backoff, for up to the retry timeout, as Kafka's admin
        client does."""
        deadline = time.monotonic() + self._retry_timeout_s
        backoff_s = 0.1
        out: dict[tuple[str, int], int] = {}
        while True:
            meta = self._metadata(sorted({t for t, _ in partitions}))
            brokers = {b["node_id"]: f"{b['host']}:{b['port']}" for b in meta["brokers"]}
            leaders = {(t["name"], p["partition_index"]): p["leader_id"]
                       for t in meta["topics"] for p in t["partitions"]}
            retry: dict[tuple[str, int], int] = {}
            for tp in (tp for tp in partitions if tp not in out):
                leader = leaders.get(tp, -1)
                if leader not in brokers:
                    retry[tp] = ErrorCode.LEADER_NOT_AVAILABLE
                    continue
                body = self._conn(brokers[leader]).request(LIST_OFFSETS, 7, {
                    "replica_id": -1, "isolation_level": 0, "topics": [{"name": tp[0], "partitions": [
                        {"partition_index": tp[1], "current_leader_epoch": -1, "timestamp": timestamp}]}]})
                p = body["topics"][0]["partitions"][0]
                if p["error_code"] in RETRIABLE_PARTITION_ERRORS:
                    retry[tp] = p["error_code"]
                elif p["error_code"] != 0:
                    raise GroupsError(f"ListOffsets of {tp[0]}-{tp[1]}: {ErrorCode(p['error_code']).name}",
                                      p["error_code"])
                else:
                    out[tp] = p["offset"]
            if not retry:
                return out
            if time.monotonic() + backoff_s > deadline:
                (topic, partition), code = next(iter(retry.items()))
                raise GroupsError(f"ListOffsets of {topic}-{partition}: {ErrorCode(code).name}", code)
            time.sleep(backoff_s)
            backoff_s = min(backoff_s * 2, 1.0)

    def commit(self, group: str, offsets: dict[tuple[str, int], int]) -> None:
        topics: dict[str, list[dict]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            topics.setdefault(topic, []).append({"partition_index": partition, "committed_offset": offset,
                                                 "committed_leader_epoch": -1, "committed_metadata": ""})
        body = self._ask_coordinator(group, OFFSET_COMMIT, 8, {
            "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]},
            lambda b: [p["error_code"] for t in b["topics"] for p in t["partitions"]])
        errors = [(t["name"], p["partition_index"], ErrorCode(p["error_code"]).name)
                  for t in body["topics"] for p in t["partitions"] if p["error_code"] != 0]
        if errors:
            raise GroupsError(f"Offset commit refused: {errors[:5]}")

    def delete(self, group: str) -> ErrorCode:
        body = self._ask_coordinator(group, DELETE_GROUPS, 2, {"groups_names": [group]},
                                     lambda b: [r["error_code"] for r in b["results"]])
        return ErrorCode(body["results"][0]["error_code"])

    def lag(self, group: str) -> tuple[dict, list[PartitionLag]]:
        """The group's description and, per partition it has offsets for or is assigned, its lag."""
        described = self.describe(group)
        committed = self.committed(group)
        owners: dict[tuple[str, int], dict] = {}
        if described["protocol_type"] == "consumer":
            for m in described["members"]:
                for topic, parts in parse_consumer_assignment(bytes(m["member_assignment"] or b"")).items():
                    for p in parts:
                        owners[(topic, p)] = m
        partitions = sorted(set(committed) | set(owners))
        ends = self.offsets_at(partitions, LATEST) if partitions else {}
        rows = []
        for tp in partitions:
            current = committed.get(tp)
            current = current if current is not None and current >= 0 else None
            m = owners.get(tp, {})
            rows.append(PartitionLag(group, tp[0], tp[1], current, ends[tp],
                                     ends[tp] - current if current is not None else None,
                                     m.get("member_id", "-") or "-", m.get("client_host", "-") or "-",
                                     m.get("client_id", "-") or "-"))
        return described, rows


# -- command line ---------------------------------------------------------------------------
def add_parser(sub: argparse._SubParsersAction) -> None:
    actions, common = admin_command(sub, "groups", "list, describe, reset or delete consumer groups", __doc__, [
        "rafka groups list --bootstrap-server 127.0.0.1:9092", "rafka groups describe orders-app",
        "rafka groups reset-offsets orders-app --topic orders --to-earliest --execute"])
    actions.add_parser("list", help="every group of every broker", parents=[common])
    d = actions.add_parser("describe", help="state, members, and per partition offset, log end and lag",
                           parents=[common])
    d.add_argument("group")
    r = actions.add_parser("reset-offsets", help="move a group's committed offsets (group must be inactive)",
                           parents=[common])
    r.add_argument("group")
    r.add_argument("--topic", required=True, help="TOPIC, or TOPIC:P1,P2 for some partitions")
    how = r.add_mutually_exclusive_group(required=True)
    how.add_argument("--to-earliest", action="store_true")
    how.add_argument("--to-latest", action="store_true")
    how.add_argument("--to-datetime", metavar="ISO", help="e.g. 2026-11-22T10:00:00Z")
    how.add_argument("--to-offset", type=int, metavar="N")
    how.add_argument("--shift-by", type=int, metavar="N")
    mode = r.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the plan only (the default)")
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    x = actions.add_parser("delete", help="delete an inactive group and its offsets", parents=[common])
    x.add_argument("group")


def run(args: argparse.Namespace) -> int:
    admin = GroupAdmin(args.bootstrap_server)
    try:
        return {"list": _list, "describe": _describe, "reset-offsets": _reset, "delete": _delete}[args.action](
            admin, args)
    except (GroupsError, OSError, ValueError) as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    finally:
        admin.close()


def _list(admin: GroupAdmin, args: argparse.Namespace) -> int:
    groups = admin.list_groups()
    if args.output == "json":
        print(json.dumps(groups, indent=2))
    else:
        print_table(["GROUP", "STATE", "PROTOCOL-TYPE"], [[g["group"], g["state"], g["protocol_type"]] for g in groups])
    return 0


def _describe(admin: GroupAdmin, args: argparse.Namespace) -> int:
    described, rows = admin.lag(args.group)
    if args.output == "json":
        print(json.dumps({"group": args.group, "state": described["group_state"],
                          "protocol_type": described["protocol_type"], "protocol": described["protocol_data"],
                          "members": [{"member_id": m["member_id"], "group_instance_id": m["group_instance_id"],
                                       "client_id": m["client_id"], "host": m["client_host"]}
                                      for m in described["members"]],
                          "partitions": [asdict(r) for r in rows]}, indent=2))
        return 0
    state = described["group_state"]
    if state in INACTIVE_STATES and described["members"] == []:
        print(f"\nConsumer group '{args.group}' has no active members.\n")
    print_table(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
            "CLIENT-ID"],
           [[r.group, r.topic, r.partition, "-" if r.current_offset is None else r.current_offset, r.log_end_offset,
             "-" if r.lag is None else r.lag, r.consumer_id, r.host, r.client_id] for r in rows])
    print(f"\nGroup '{args.group}' is {state} with {len(described['members'])} members.")
    return 0


def _reset(admin: GroupAdmin, args: argparse.Namespace) -> int:
    topic, _, chosen = args.topic.partition(":")
    partitions = admin.partitions(topic)
    if chosen:
        wanted = {int(p) for p in chosen.split(",")}
        partitions = [tp for tp in partitions if tp[1] in wanted]
    described = admin.describe(args.group)
    if args.execute and described["group_state"] not in INACTIVE_STATES:
        raise GroupsError(f"Assignments can only be reset if the group '{args.group}' is inactive, but the "
                          f"current state is {described['group_state']}.")
    committed = admin.committed(args.group)
    earliest, latest = admin.offsets_at(partitions, EARLIEST), admin.offsets_at(partitions, LATEST)
    if args.to_earliest:
        mode, value, at_time = "to-earliest", None, None
    elif args.to_latest:
        mode, value, at_time = "to-latest", None, None
    elif args.to_offset is not None:
        mode, value, at_time = "to-offset", args.to_offset, None
    elif args.shift_by is not None:
        mode, value, at_time = "shift-by", args.shift_by, None
    else:
        mode, value = "to-datetime", None
        at_time = admin.offsets_at(partitions, parse_datetime_ms(args.to_datetime))
    plan = plan_reset(partitions, mode, value, committed, earliest, latest, at_time)
    if args.execute:
        admin.commit(args.group, plan)
    if args.output == "json":
        print(json.dumps({"group": args.group, "executed": bool(args.execute),
                          "offsets": [{"topic": t, "partition": p, "new_offset": o} for (t, p), o in plan.items()]},
                         indent=2))
    else:
        print_table(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [[args.group, t, p, o] for (t, p), o in plan.items()])
        if not args.execute:
            print("\n(dry run: nothing changed; add --execute to commit these offsets)", file=sys.stderr)
    return 0


def _delete(admin: GroupAdmin, args: argparse.Namespace) -> int:
    code = admin.delete(args.group)
    if code is not ErrorCode.NONE:
        raise GroupsError(f"Deletion of group '{args.group}' failed: {code.name}")
    print(f"Deletion of requested consumer groups ('{args.group}') was successful.")
    return 0
