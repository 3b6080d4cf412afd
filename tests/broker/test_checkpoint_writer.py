"""The thread that writes leader-epoch checkpoints off the event loop."""

import threading

from broker.log.checkpoint_writer import CheckpointWriter
from broker.log.leader_epoch import LeaderEpochCache
from common.polling import wait_until


class _Counting:
    def __init__(self) -> None:
        self.flushes = 0
        self.thread = None

    def flush(self) -> None:
        self.flushes += 1
        self.thread = threading.current_thread()


def test_caches_are_written_on_the_writer_thread(tmp_path):
    w = CheckpointWriter()
    caches = [LeaderEpochCache(tmp_path / str(i), on_dirty=w.submit) for i in range(20)]
    for i, c in enumerate(caches):
        (tmp_path / str(i)).mkdir()
        c.assign(1, i)
    wait_until(lambda: not any(c.dirty for c in caches), 10.0, what="every checkpoint written")
    assert [LeaderEpochCache(tmp_path / str(i)).entries for i in range(20)] == [[(1, i)] for i in range(20)]
    w.close()


def test_queued_twice_is_written_once_and_close_writes_the_rest():
    w = CheckpointWriter()
    entered, gate = threading.Event(), threading.Event()

    def hold() -> None:   # holds the thread on its first cache
        entered.set()
        gate.wait(10)

    blocker = _Counting()
    blocker.flush = hold  # type: ignore[method-assign]
    w.submit(blocker)
    # The thread must be inside the blocker before c is queued twice, else it could take c with the blocker
    # and again after it (a race the full suite once lost).
    assert entered.wait(10)
    c = _Counting()
    w.submit(c)
    w.submit(c)
    gate.set()
    w.close()
    assert c.flushes == 1 and c.thread is not threading.current_thread()
    late = _Counting()
    w.submit(late)  # after close: written by the caller
    assert late.flushes == 1 and late.thread is threading.current_thread()


def test_a_failed_write_does_not_stop_the_thread(tmp_path):
    w = CheckpointWriter()
    gone = LeaderEpochCache(tmp_path / "missing", on_dirty=w.submit)
    gone.assign(1, 0)  # its directory does not exist: the write fails
    (tmp_path / "ok").mkdir()
    ok = LeaderEpochCache(tmp_path / "ok", on_dirty=w.submit)
    ok.assign(1, 0)
    wait_until(lambda: not ok.dirty, 10.0, what="the second checkpoint written")
    assert gone.dirty
    w.close()
