"""benchmarks.idle_neighbour's /proc reading, on this test's own process: CPU time and the voluntary context
switches of every thread move with what the process does."""

import os
import threading
import time

from benchmarks import idle_neighbour


def test_counters_follow_cpu_and_blocking():
    cpu0, woke0 = idle_neighbour.process_counters(os.getpid())
    end = time.process_time() + 0.05
    while time.process_time() < end:   # 50 ms of CPU
        pass
    slept, done = threading.Event(), threading.Event()

    def blocker() -> None:   # blocks 20 times, then stays alive (a thread that ended leaves /proc) until read
        for _ in range(20):
            time.sleep(0.001)
        slept.set()
        done.wait(10)

    t = threading.Thread(target=blocker)
    t.start()
    assert slept.wait(10)
    cpu1, woke1 = idle_neighbour.process_counters(os.getpid())
    done.set()
    t.join()
    assert cpu1 - cpu0 >= 0.03   # clock ticks: 10 ms each
    assert woke1 - woke0 >= 20


def test_sample_reports_rates_over_its_window():
    out = idle_neighbour.sample([os.getpid()], 0.05)
    assert out["processes"] == 1 and out["cpu ms/s"] >= 0 and out["wake-ups/s"] >= 0
