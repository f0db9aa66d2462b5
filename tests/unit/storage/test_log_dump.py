"""`rafka dump-log`: Kafka 3.9 DumpLogSegments lines for our segments, indexes and snapshots."""
from __future__ import annotations

import random
import struct

import crc32c
import pytest

from rafka.cli.main import main
from rafka.common.config import LogConfig
from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.log_dump import (
    DumpLine, dump_file, log_lines, offset_index_lines, producer_line, snapshot_lines, time_index_lines,
)
from rafka.partition_worker.producer_state import INT32_MAX, ProducerStateEntry, ProducerStateManager
from rafka.partition_worker.record_batch import (
    CRC_OFFSET, Compression, Record, TimestampType, encode_batch, iter_batches, parse_header,
)

TS = 1_700_000_000_000
SEGMENT = "00000000000000000000"

# The batch of the example in Kafka's docs: producer 1000, 10 records "abc" -> "hello".
KNOWN_BATCH = encode_batch([Record(i, TS, b"abc", b"hello") for i in range(10)],
                           producer_id=1000, producer_epoch=0, base_sequence=0, partition_leader_epoch=0)
KNOWN_BATCH_LINE = (
    "baseOffset: 0 lastOffset: 9 count: 10 baseSequence: 0 lastSequence: 9 producerId: 1000 producerEpoch: 0 "
    "partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
    "position: 0 CreateTime: 1700000000000 size: 211 magic: 2 compresscodec: none crc: 481841737 isvalid: true")


def texts(lines) -> list[str]:
    return [line.text for line in lines]


def failed(lines: list[DumpLine]) -> bool:
    return any(line.failed for line in lines)


def write_log(directory, batches: list[bytes], base_offset: int = 0, tail: bytes = b""):
    """A `.log` holding `batches` back to back, then `tail`; returns its path."""
    path = directory / f"{base_offset:020d}.log"
    path.write_bytes(b"".join(batches) + tail)
    return path


def with_attributes(batch: bytes, extra: int) -> bytes:
    """The batch with `extra` attribute bits set and its CRC recomputed."""
    out = bytearray(batch)
    struct.pack_into(">h", out, 21, struct.unpack_from(">h", out, 21)[0] | extra)
    struct.pack_into(">I", out, CRC_OFFSET, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


# -- .log ------------------------------------------------------------------------------------

def test_known_batch_gives_kafkas_exact_lines(tmp_path):
    path = write_log(tmp_path, [KNOWN_BATCH])
    assert KNOWN_BATCH_LINE.endswith(f"crc: {crc32c.crc32c(KNOWN_BATCH[21:])} isvalid: true")
    lines = list(dump_file(path))
    assert texts(lines) == [f"Dumping {path}", "Log starting offset: 0", KNOWN_BATCH_LINE]
    assert not failed(lines) and not any(line.diagnostic for line in lines)


def test_print_data_log_adds_one_line_per_record(tmp_path):
    records = [Record(0, TS, b"abc", b"hello", (("h1", b"x"), ("h2", None))),
               Record(1, TS + 5, None, b"\xffok"),
               Record(2, TS + 9, b"k", None)]
    path = write_log(tmp_path, [encode_batch(records, producer_id=7, producer_epoch=1, base_sequence=5)])
    lines = texts(dump_file(path, print_data_log=True))
    assert lines[3:] == [
        "| offset: 0 CreateTime: 1700000000000 keySize: 3 valueSize: 5 sequence: 5 headerKeys: [h1,h2] "
        "key: abc payload: hello",
        "| offset: 1 CreateTime: 1700000000005 keySize: -1 valueSize: 3 sequence: 6 headerKeys: [] "
        "payload: \ufffdok",
        "| offset: 2 CreateTime: 1700000000009 keySize: 1 valueSize: -1 sequence: 7 headerKeys: [] key: k",
    ]
    assert lines[2].startswith("baseOffset: 0 lastOffset: 2 count: 3 baseSequence: 5 lastSequence: 7 "
                               "producerId: 7 producerEpoch: 1 ")


def test_deep_iteration_shows_records_without_keys_or_values(tmp_path):
    path = write_log(tmp_path, [KNOWN_BATCH])
    lines = texts(dump_file(path, deep_iteration=True))
    assert lines[3] == "| offset: 0 CreateTime: 1700000000000 keySize: 3 valueSize: 5 sequence: 0 headerKeys: []"
    assert len(lines) == 13


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.name.lower())
def test_compressed_batches_name_their_codec_and_decode(tmp_path, codec):
    batch = encode_batch([Record(40 + i, TS + i, None, b"v" * 50) for i in range(4)], base_offset=40,
                         compression=codec)
    path = write_log(tmp_path, [batch], base_offset=40)
    lines = list(dump_file(path, print_data_log=True))
    assert lines[1].text == "Log starting offset: 40"
    assert f" compresscodec: {codec.name.lower()} crc: " in lines[2].text
    assert lines[2].text.endswith("isvalid: true")
    assert texts(lines[3:]) == [
        f"| offset: {40 + i} CreateTime: {TS + i} keySize: -1 valueSize: 50 sequence: -1 headerKeys: [] "
        f"payload: {'v' * 50}" for i in range(4)]
    assert not failed(lines)


def test_log_append_time_transactional_and_delete_horizon_flags(tmp_path):
    batch = encode_batch([Record(0, TS, None, b"v")], timestamp_type=TimestampType.LOG_APPEND_TIME,
                         max_timestamp=TS + 777, is_transactional=True, producer_id=3, producer_epoch=0,
                         base_sequence=0)
    path = write_log(tmp_path, [with_attributes(batch, 0x40)])
    lines = texts(dump_file(path, deep_iteration=True))
    assert " isTransactional: true isControl: false deleteHorizonMs: OptionalLong[1700000000000] " in lines[2]
    assert " LogAppendTime: 1700000000777 size: " in lines[2]
    assert lines[2].endswith("isvalid: true")
    assert lines[3] == "| offset: 0 LogAppendTime: 1700000000777 keySize: -1 valueSize: 1 sequence: 0 headerKeys: []"


def test_sequences_wrap_at_int32_max(tmp_path):
    batch = encode_batch([Record(i, TS, None, b"v") for i in range(3)], producer_id=1, producer_epoch=0,
                         base_sequence=INT32_MAX - 1)
    lines = texts(dump_file(write_log(tmp_path, [batch]), deep_iteration=True))
    assert f" baseSequence: {INT32_MAX - 1} lastSequence: 0 " in lines[2]
    assert [line.split(" sequence: ")[1].split()[0] for line in lines[3:]] == [str(INT32_MAX - 1), str(INT32_MAX), "0"]


def test_control_batch_shows_its_marker_not_its_key_and_value(tmp_path):
    commit = Record(5, TS, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 7))
    batch = encode_batch([commit], base_offset=5, is_control=True, is_transactional=True,
                         producer_id=9, producer_epoch=2)
    lines = texts(dump_file(write_log(tmp_path, [batch], base_offset=5), print_data_log=True))
    assert " isTransactional: true isControl: true " in lines[2]
    assert lines[3] == ("| offset: 5 CreateTime: 1700000000000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
                        "endTxnMarker: COMMIT coordinatorEpoch: 7")


def test_truncated_tail_ends_the_dump_with_kafkas_invalid_bytes_line(tmp_path):
    second = encode_batch([Record(10, TS, None, b"x" * 30)], base_offset=10)
    path = write_log(tmp_path, [KNOWN_BATCH], tail=second[:len(second) - 7])
    lines = list(dump_file(path))
    assert texts(lines) == [f"Dumping {path}", "Log starting offset: 0", KNOWN_BATCH_LINE,
                            f"Found {len(second) - 7} invalid bytes at the end of {SEGMENT}.log"]
    assert lines[-1].failed and not lines[-1].diagnostic  # Kafka prints it to stdout


@pytest.mark.parametrize("garbage", [b"\x00" * 5, b"\xff" * 100, bytes(range(256)) * 3],
                         ids=["short", "negative-length", "bytes"])
def test_garbage_after_the_batches_is_reported_not_raised(tmp_path, garbage):
    lines = texts(dump_file(write_log(tmp_path, [KNOWN_BATCH], tail=garbage), print_data_log=True))
    assert lines[2] == KNOWN_BATCH_LINE
    assert lines[-1] == f"Found {len(garbage)} invalid bytes at the end of {SEGMENT}.log"


def test_bad_crc_prints_isvalid_false_and_goes_on(tmp_path):
    corrupt = bytearray(KNOWN_BATCH)
    corrupt[-2] ^= 0x01  # last byte of the last value ("hello" -> "helln"): records still parse
    second = encode_batch([Record(10, TS, None, b"y")], base_offset=10)
    lines = list(dump_file(write_log(tmp_path, [bytes(corrupt), second]), print_data_log=True))
    assert lines[2].text == KNOWN_BATCH_LINE.replace("isvalid: true", "isvalid: false")
    assert lines[2].failed
    assert lines[12].text.endswith("key: abc payload: helln")
    assert lines[13].text.startswith("baseOffset: 10 lastOffset: 10 ") and not lines[13].failed


def test_records_that_do_not_decode_give_a_failed_line(tmp_path):
    batch = bytearray(encode_batch([Record(0, TS, None, b"v" * 20)], compression=Compression.GZIP))
    batch[70:80] = b"\x00" * 10  # inside the gzip stream
    lines = list(dump_file(write_log(tmp_path, [bytes(batch)]), deep_iteration=True))
    assert lines[2].text.endswith("compresscodec: gzip crc: %d isvalid: false" % parse_header(batch).crc)
    assert lines[3].diagnostic and lines[3].failed
    assert lines[3].text.startswith("Cannot read the records of the batch at position 0: ")
    assert len(lines) == 4


def test_max_bytes_stops_before_a_cut_batch_without_calling_it_invalid(tmp_path):
    second = encode_batch([Record(10, TS, None, b"y")], base_offset=10)
    path = write_log(tmp_path, [KNOWN_BATCH, second])
    lines = list(dump_file(path, max_bytes=len(KNOWN_BATCH) + 10))
    assert texts(lines)[2:] == [KNOWN_BATCH_LINE]
    assert not failed(lines)


def test_offset_gaps_are_listed_as_diagnostics_but_not_failures(tmp_path):
    a = encode_batch([Record(0, TS, None, b"a"), Record(3, TS, None, b"b")])
    b = encode_batch([Record(7, TS, None, b"c")], base_offset=7)
    lines = list(log_lines(b"".join([a, b]), tmp_path / f"{SEGMENT}.log", deep_iteration=True))
    assert [(line.text, line.diagnostic) for line in lines[-3:]] == [
        (f"Non-consecutive offsets in {tmp_path / SEGMENT}.log", True),
        ("  0 is followed by 3", True), ("  3 is followed by 7", True)]
    assert not failed(lines)


def test_random_damage_never_raises(tmp_path):
    batches = [encode_batch([Record(10 * i + j, TS, b"k", b"v" * 20) for j in range(3)], base_offset=10 * i,
                            compression=Compression(i % 5)) for i in range(5)]
    clean = b"".join(batches)
    rng = random.Random(20240901)
    for _ in range(300):
        damaged = bytearray(clean[:rng.randrange(len(clean) + 1)])
        for _ in range(rng.randrange(4)):
            if damaged:
                damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        lines = list(log_lines(bytes(damaged), f"{SEGMENT}.log", print_data_log=True))
        assert all(isinstance(line.text, str) for line in lines)


# -- a real partition directory ---------------------------------------------------------------

def test_partition_log_files_dump_cleanly_and_indexes_verify(tmp_path):
    log = PartitionLog.open(tmp_path / "orders-0", LogConfig(segment_bytes=1024, index_interval_bytes=128))
    for i in range(30):
        records = [Record(j, TS + 10 * i + j, f"k{j}".encode(), b"v" * 30) for j in range(3)]
        log.append(bytearray(encode_batch(records, compression=Compression(i % 5))), leader_epoch=4,
                   max_batch_bytes=1 << 20)
    log.close()
    segments = log.segments
    assert len(segments) > 2
    for seg in segments:
        stem = tmp_path / "orders-0" / f"{seg.base_offset:020d}"
        log_dump = list(dump_file(f"{stem}.log"))
        assert log_dump[1].text == f"Log starting offset: {seg.base_offset}"
        batch_lines = texts(log_dump[2:])
        assert len(batch_lines) == len(list(iter_batches((stem.parent / f"{stem.name}.log").read_bytes())))
        assert all(" partitionLeaderEpoch: 4 " in line and line.endswith("isvalid: true") for line in batch_lines)
        index_dump = list(dump_file(f"{stem}.index"))
        expected = [f"offset: {o} position: {p}" for o, p in seg.index.entries()] or [f"{stem}.index is empty."]
        assert texts(index_dump[1:]) == expected
        time_dump = list(dump_file(f"{stem}.timeindex"))
        assert texts(time_dump[1:]) == [f"timestamp: {t} offset: {o}" for t, o in seg.time_index.entries()]
        verified = list(dump_file(f"{stem}.index", verify_index_only=True))
        assert not failed(log_dump + index_dump + time_dump + verified)
    assert any(len(seg.index) for seg in segments)


# -- .index and .timeindex ---------------------------------------------------------------------

def two_batches() -> list:
    """Headers of batches 100-109 (position 0) and 110-119 (position 211)."""
    data = encode_batch([Record(100 + i, TS + i, b"abc", b"hello") for i in range(10)], base_offset=100)
    data += encode_batch([Record(110 + i, TS + 50 + i, b"abc", b"hello") for i in range(10)], base_offset=110)
    return list(iter_batches(data))


def test_index_dump_stops_at_the_preallocated_zero_tail(tmp_path):
    data = struct.pack(">ii", 9, 0) + struct.pack(">ii", 19, 211) + bytes(8 * 50)
    lines = list(offset_index_lines(data, 100, two_batches(), tmp_path / "x.index"))
    assert texts(lines) == ["offset: 109 position: 0", "offset: 119 position: 211"]
    assert not failed(lines)


def test_index_entries_missing_the_log_are_mismatches(tmp_path):
    path = tmp_path / "00000000000000000100.index"
    data = struct.pack(">ii", 9, 0) + struct.pack(">ii", 25, 211) + struct.pack(">ii", 5, 500)
    lines = list(offset_index_lines(data, 100, two_batches(), path, verify_only=True))
    assert [(line.text, line.diagnostic, line.failed) for line in lines] == [
        (f"Mismatches in :{path}", True, True),
        ("  Index offset: 125, log offset: 119", True, True),
        ("  Index offset: 105, log offset: -1", True, True),
        (f"Offsets not increasing in :{path}", True, True),
        ("  Index offset: 105, previous index offset: 125", True, True)]


def test_empty_index_says_so(tmp_path):
    path = tmp_path / f"{SEGMENT}.index"
    path.write_bytes(b"")
    write_log(tmp_path, [])
    assert texts(dump_file(path)) == [f"Dumping {path}", f"{path} is empty."]


def test_index_without_its_log_cannot_be_checked(tmp_path):
    path = tmp_path / f"{SEGMENT}.index"
    path.write_bytes(struct.pack(">ii", 9, 0))
    lines = list(dump_file(path))
    assert lines[1].text == f"Cannot check {path}: its log {tmp_path / SEGMENT}.log does not exist"
    assert lines[1].failed and lines[2].text == "offset: 9 position: 0"


def test_time_index_dump_and_kafkas_checks(tmp_path):
    path = tmp_path / "00000000000000000100.timeindex"
    good = struct.pack(">qi", TS + 9, 9) + struct.pack(">qi", TS + 59, 19)
    lines = list(time_index_lines(good + bytes(12 * 10), 100, two_batches(), path))
    assert texts(lines) == ["timestamp: 1700000000009 offset: 109", "timestamp: 1700000000059 offset: 119"]
    assert not failed(lines)
    bad = struct.pack(">qi", TS + 9, 9) + struct.pack(">qi", TS + 3, 19) + struct.pack(">qi", TS + 99, 15)
    lines = list(time_index_lines(bad, 100, two_batches(), path, verify_only=True))
    assert texts(lines) == [
        f"Found timestamp mismatch in :{path}", "  Index timestamp: 1700000000003, log timestamp: 1700000000059",
        f"Found out of order timestamp in :{path}",
        "  Index timestamp: 1700000000003, Previously indexed timestamp: 1700000000009",
        "The following indexed offsets are not found in the log.", "Indexed offset: 115, found log offset: 119"]
    assert all(line.failed and line.diagnostic for line in lines)


# -- .snapshot -------------------------------------------------------------------------------

def test_snapshot_written_by_the_producer_state_manager(tmp_path):
    state = ProducerStateManager()
    state.update(parse_header(KNOWN_BATCH), first_offset=0)
    later = encode_batch([Record(i, TS + 100, None, b"v") for i in range(4)], producer_id=2000, producer_epoch=3,
                         base_sequence=20)
    state.update(parse_header(later), first_offset=10)
    path = state.write_snapshot(tmp_path, 14)
    lines = list(dump_file(path))
    assert texts(lines) == [
        f"Dumping {path}",
        "producerId: 1000 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 1700000000000 firstSequence: 0 lastSequence: 9 lastOffset: 9 offsetDelta: 9 "
        "timestamp: 1700000000000",
        "producerId: 2000 producerEpoch: 3 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 1700000000100 firstSequence: 20 lastSequence: 23 lastOffset: 13 offsetDelta: 3 "
        "timestamp: 1700000000100"]
    assert not failed(lines)


def test_producer_without_batches_ends_like_kafkas_line():
    entry = ProducerStateEntry(5, 1, coordinator_epoch=2, last_timestamp=TS, current_txn_first_offset=40)
    assert producer_line(entry) == ("producerId: 5 producerEpoch: 1 coordinatorEpoch: 2 "
                                    "currentTxnFirstOffset: OptionalLong[40] lastTimestamp: 1700000000000 ")


@pytest.mark.parametrize("damage", ["crc", "short", "version"])
def test_corrupt_snapshot_is_a_failed_line(tmp_path, damage):
    state = ProducerStateManager()
    state.update(parse_header(KNOWN_BATCH), first_offset=0)
    data = bytearray(state.encode_snapshot())
    if damage == "crc":
        data[-1] ^= 0xFF
    elif damage == "short":
        data = data[:4]
    else:
        data[1] = 9
    lines = list(snapshot_lines(bytes(data), "00000000000000000010.snapshot"))
    assert len(lines) == 1 and lines[0].failed and lines[0].diagnostic
    assert lines[0].text.startswith("Corrupt producer snapshot 00000000000000000010.snapshot: ")


# -- .txnindex -------------------------------------------------------------------------------

def test_txn_index_lines_are_kafkas(tmp_path):
    path = tmp_path / f"{SEGMENT}.txnindex"
    path.write_bytes(struct.pack(">hqqqq", 0, 983493, 137, 299, 200) + struct.pack(">hqqqq", 0, 7, 300, 310, 311)
                     + b"\x00" * 10)                      # a torn last entry is skipped, as Kafka's reader does
    assert texts(dump_file(path))[1:] == [
        "version: 0 producerId: 983493 firstOffset: 137 lastOffset: 299 lastStableOffset: 200",
        "version: 0 producerId: 7 firstOffset: 300 lastOffset: 310 lastStableOffset: 311",
    ]


def test_txn_index_of_an_unknown_version_is_a_failed_line(tmp_path):
    path = tmp_path / f"{SEGMENT}.txnindex"
    path.write_bytes(struct.pack(">hqqqq", 0x0100, 1, 2, 3, 4))
    (line,) = list(dump_file(path))[1:]
    assert line.failed and line.text.startswith(f"Corrupt transaction index {path}: ")


# -- files that cannot be dumped -------------------------------------------------------------

def test_unknown_missing_and_misnamed_files_fail_without_raising(tmp_path):
    (tmp_path / "leader-epoch-checkpoint").write_text("0\n0\n")
    (tmp_path / "orders.log").write_bytes(KNOWN_BATCH)
    assert texts(dump_file(tmp_path / "leader-epoch-checkpoint"))[1] == \
        f"Ignoring unknown file {tmp_path / 'leader-epoch-checkpoint'}"
    missing = list(dump_file(tmp_path / f"{SEGMENT}.log"))
    assert missing[-1].text == f"Cannot read {tmp_path / SEGMENT}.log: No such file or directory"
    misnamed = list(dump_file(tmp_path / "orders.log"))
    assert misnamed[-1].text == f"Cannot dump {tmp_path / 'orders.log'}: its name does not start with a base offset"
    assert all(lines[-1].failed and lines[-1].diagnostic for lines in (missing, misnamed))


# -- the command -----------------------------------------------------------------------------

def test_cli_dumps_to_stdout_and_exits_0(tmp_path, capsys):
    path = write_log(tmp_path, [KNOWN_BATCH])
    assert main(["dump-log", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out == f"Dumping {path}\nLog starting offset: 0\n{KNOWN_BATCH_LINE}\n"
    assert err == ""


def test_cli_files_option_takes_a_comma_separated_list(tmp_path, capsys):
    path = write_log(tmp_path, [KNOWN_BATCH])
    state = ProducerStateManager()
    state.update(parse_header(KNOWN_BATCH), first_offset=0)
    snapshot = state.write_snapshot(tmp_path, 10)
    assert main(["dump-log", "--print-data-log", "--files", f"{path},{snapshot}"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"Dumping {path}" and out[13] == f"Dumping {snapshot}"
    assert out[3].endswith("key: abc payload: hello") and out[14].startswith("producerId: 1000 ")


def test_cli_exits_1_when_a_file_is_corrupt_and_reports_problems_on_stderr(tmp_path, capsys):
    path = write_log(tmp_path, [KNOWN_BATCH], tail=b"\xff" * 70)
    assert main(["dump-log", str(path), str(tmp_path / "nope.txt")]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines()[-2:] == [f"Found 70 invalid bytes at the end of {SEGMENT}.log",
                                     f"Dumping {tmp_path / 'nope.txt'}"]
    assert err == f"Ignoring unknown file {tmp_path / 'nope.txt'}\n"


def test_cli_exits_1_when_index_verification_fails(tmp_path, capsys):
    write_log(tmp_path, [KNOWN_BATCH])
    index = tmp_path / f"{SEGMENT}.index"
    index.write_bytes(struct.pack(">ii", 4, 0))  # inside batch 0-9: fine
    assert main(["dump-log", "--verify-index-only", str(index)]) == 0
    assert capsys.readouterr() == (f"Dumping {index}\n", "")
    index.write_bytes(struct.pack(">ii", 12, 0))  # past batch 0-9
    assert main(["dump-log", "--verify-index-only", str(index)]) == 1
    assert capsys.readouterr() == (f"Dumping {index}\n",
                                   f"Mismatches in :{index}\n  Index offset: 12, log offset: 9\n")


def test_cli_usage_errors_exit_2(capsys):
    assert main(["dump-log"]) == 2
    assert "no files given" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["dump-log", "--max-bytes", "-1", "a.log"])
    assert exc.value.code == 2


def test_cli_help_ends_with_an_example(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["dump-log", "--help"])
    assert exc.value.code == 0
    assert "rafka dump-log --print-data-log" in capsys.readouterr().out
