"""The log dirs' `.lock` files: one holder at a time, and the session the last holder wrote."""
from __future__ import annotations

import subprocess
import sys

import pytest

from rafka.common.errors import StartupError
from rafka.coordinator.broker.log_dir_lock import LOCK_FILE, LogDirLocks


def test_a_second_holder_is_refused_with_kafkas_message_and_keeps_nothing(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    first = LogDirLocks([str(b)])
    first.acquire()
    second = LogDirLocks([str(a), str(b)])
    with pytest.raises(StartupError, match=r"Failed to acquire lock on file \.lock in .*/b\. A Kafka instance"):
        second.acquire()
    third = LogDirLocks([str(a)])   # the second let go of a when it failed on b
    third.acquire()
    third.release()
    first.release()
    second.acquire()                # free again once released
    second.release()
    assert (a / LOCK_FILE).exists() and (b / LOCK_FILE).exists()   # the files stay, as Kafka's


def test_the_session_a_holder_noted_is_read_by_the_next_one(tmp_path):
    locks = LogDirLocks([str(tmp_path)])
    locks.acquire()
    assert locks.previous_sessions() == set()
    locks.note_session(0x100039ac3e90002)
    locks.note_session(0)                      # no session: nothing noted
    locks.release()
    again = LogDirLocks([str(tmp_path)])
    again.acquire()
    assert again.previous_sessions() == {0x100039ac3e90002}
    again.note_session(7)
    assert again.previous_sessions() == {7}    # replaced, not appended
    again.release()


def test_a_killed_holders_lock_is_free_at_once(tmp_path):
    """kill -9 of the holder drops its lock: the next broker process takes it and trusts the
    session it left."""
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys; from rafka.coordinator.broker.log_dir_lock import LogDirLocks\n"
        f"locks = LogDirLocks([{str(tmp_path)!r}]); locks.acquire(); locks.note_session(42)\n"
        "print('held', flush=True); sys.stdin.read()")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StartupError):
            LogDirLocks([str(tmp_path)]).acquire()
    finally:
        holder.kill()
        holder.wait()
    locks = LogDirLocks([str(tmp_path)])
    locks.acquire()
    assert locks.previous_sessions() == {42}
    locks.release()
