"""Rebalance time when a fourth member joins a busy group: classic eager (range assignor), classic cooperative
(cooperative-sticky, KIP-429) and the consumer protocol (KIP-848, the broker's `uniform` assignor), on our broker
and on Apache Kafka 4.1 (single-node KRaft), in the same run.

    python -m benchmarks.rebalance_time [--repeat 3] [--warmup 1] [--rate 2000] [--heartbeat-ms 500]
                                        [--backends kafkascope,kafka-4.1] [--protocols eager,cooperative,consumer]

Both brokers are started once and stay up; the runs interleave (for each repeat, each protocol, each backend) so
a change in the machine's load hits both alike. One run: a fresh group; a producer sends ``--rate`` records/s
(100 bytes, round robin) to a 12-partition topic; three members (benchmarks/rebalance_member.py, one process each,
confluent-kafka) subscribe and consume until they hold four partitions each; then the fourth member subscribes.
From the assignment callbacks' timestamps (time.monotonic(), one clock for every process):

* rebalance time: from the fourth member's subscribe() to the moment every member holds its final assignment
  (three partitions each; the last callback that got it there);
* pause: the longest time one of the three earlier members held nothing in that window (eager revokes all
  before reassigning: a stop-the-world; cooperative and KIP-848 members keep what they keep);
* after notice: from the first callback an earlier member got (the group noticed the newcomer) to the end. A
  classic member learns of a rebalance on its next heartbeat, so the rebalance time includes a draw between 0
  and one heartbeat interval; this figure leaves that draw out and is the part a broker can change.

The heartbeat interval is the same for every protocol (``--heartbeat-ms``: the clients' heartbeat.interval.ms
in the classic modes, the brokers' group.consumer.heartbeat.interval.ms under KIP-848), since the members learn of
a rebalance on a heartbeat. Medians over ``--repeat`` runs after ``--warmup`` discarded ones per backend and
protocol; ratio = ours / Kafka (< 1: we rebalance faster). The 1-minute load average at the start and the end is
printed. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator

from benchmarks._common import ROOT, create_topic, emit_json, fmt, our_broker, print_table, ratio
from common.polling import wait_until

PARTITIONS = 12
TOPIC = "rebalance-load"
PROTOCOLS = ("eager", "cooperative", "consumer")
BACKENDS = ("kafkascope", "kafka-4.1")
FIGURES = ("rebalance_s", "pause_s", "after_notice_s")
SETTLE_S = 0.5   # the three members keep consuming this long (plus a random phase) before the fourth subscribes

Timeline = list[tuple[float, frozenset[int]]]


# ---------------------------------------------------------------- pure: what a run measured

def balanced(assignments: list[frozenset[int]], partitions: int = PARTITIONS) -> bool:
    """Every partition held by exactly one member, the same number each (12 over 3 or 4 members)."""
    sizes = [len(a) for a in assignments]
    return (sum(sizes) == partitions and frozenset().union(*assignments) == frozenset(range(partitions))
            and max(sizes) == min(sizes))


def empty_time(timeline: Timeline, start: float, end: float) -> float:
    """Seconds within [start, end] the member held nothing; before its first event it held nothing."""
    held: frozenset[int] = frozenset()
    cursor, total = start, 0.0
    for t, assignment in timeline:
        if t > start:
            upto = min(t, end)
            if not held and upto > cursor:
                total += upto - cursor
            cursor = max(cursor, upto)
        held = assignment
        if t >= end:
            break
    if not held and end > cursor:
        total += end - cursor
    return total


def measure(subscribed_at: float, timelines: dict[str, Timeline], existing: list[str]) -> dict[str, float]:
    """rebalance_s: subscribe of the newcomer to the last callback any member got (each member's last one is its
    final assignment); pause_s: the longest an `existing` member held nothing meanwhile; after_notice_s: from the
    first callback of an `existing` member after the subscribe (the group noticed the newcomer, on a heartbeat
    whose phase is luck) to the end."""
    done = max([subscribed_at, *(tl[-1][0] for tl in timelines.values() if tl)])
    pause = max(empty_time(timelines[name], subscribed_at, done) for name in existing)
    notice = min([done, *(t for name in existing for t, _ in timelines[name] if t > subscribed_at)])
    return {"rebalance_s": round(done - subscribed_at, 4), "pause_s": round(pause, 4),
            "after_notice_s": round(done - notice, 4)}


# ---------------------------------------------------------------- I/O: members, load, brokers

class MemberProc:
    """A benchmarks.rebalance_member process and the events it printed."""

    def __init__(self, bootstrap: str, group: str, mode: str, heartbeat_ms: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.rebalance_member", bootstrap, TOPIC, group, mode, str(heartbeat_ms)],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.events: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.events.append(json.loads(line))

    def _last(self, key: str) -> dict | None:
        return next((e for e in reversed(self.events) if key in e), None)

    @property
    def ready(self) -> bool:
        return self._last("ready") is not None

    @property
    def subscribed_at(self) -> float:
        e = self._last("subscribed")
        assert e is not None, "member not subscribed"
        return float(e["t"])

    @property
    def timeline(self) -> Timeline:
        return [(e["t"], frozenset(e["assignment"])) for e in list(self.events) if "assignment" in e]

    @property
    def assignment(self) -> frozenset[int]:
        e = self._last("assignment")
        return frozenset(e["assignment"]) if e else frozenset()

    @property
    def consumed(self) -> int:
        e = self._last("consumed")
        return int(e["consumed"]) if e else 0

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()

    def close(self, timeout_s: float = 30.0) -> None:
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


class Load:
    """A producer sending `rate` records/s round robin over the topic's partitions, on a thread."""

    def __init__(self, bootstrap: str, rate: int) -> None:
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1})
        self.rate = rate
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        per_tick, sent = max(1, self.rate // 100), 0
        while not self.stop_event.wait(0.01):   # 100 ticks a second
            for _ in range(per_tick):
                self.producer.produce(TOPIC, b"x" * 100, partition=sent % PARTITIONS)
                sent += 1
            self.producer.poll(0)

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(10)
        self.producer.flush(10)


def broker_props(heartbeat_ms: int) -> dict[str, object]:
    """The same group settings on both brokers: no initial delay, the KIP-848 heartbeat at --heartbeat-ms."""
    return {"group.consumer.heartbeat.interval.ms": heartbeat_ms,
            "group.consumer.min.heartbeat.interval.ms": min(heartbeat_ms, 100),
            "group.initial.rebalance.delay.ms": 0}


@contextlib.contextmanager
def backend(name: str, heartbeat_ms: int) -> Iterator[str]:
    """Start `name` and yield its bootstrap address, the load topic created."""
    if name == "kafkascope":
        cm: contextlib.AbstractContextManager = our_broker(**broker_props(heartbeat_ms))
    else:
        from kafkascope.local.apache_kafka import DEFAULT_VERSION, ApacheKafka

        cm = ApacheKafka(version=DEFAULT_VERSION, extra_props=broker_props(heartbeat_ms), log_level="WARN")
    with cm as b:
        create_topic(b.bootstrap, TOPIC, PARTITIONS)
        yield b.bootstrap


def one_run(bootstrap: str, mode: str, heartbeat_ms: int, rate: int, timeout_s: float,
            phase_s: float) -> dict[str, float]:
    group = f"rb-{mode}-{uuid.uuid4().hex[:8]}"
    members = [MemberProc(bootstrap, group, mode, heartbeat_ms) for _ in range(4)]
    load = Load(bootstrap, rate)
    try:
        wait_until(lambda: all(m.ready for m in members), 60, what="member processes ready")
        for m in members[:3]:
            m.send("go")
        wait_until(lambda: balanced([m.assignment for m in members[:3]]) and all(m.consumed for m in members[:3]),
                   timeout_s, what=f"three {mode} members split {PARTITIONS} partitions and consume")
        # A deliberate pause, not a wait for a condition: the members report "consumed" a fixed time after they
        # subscribe, so without it the newcomer would join at the same phase of the others' heartbeats every run
        # (right before one, on the first runs: a classic rebalance that looked instantaneous). A random phase
        # makes a classic rebalance include what it does in real life, on average half a heartbeat interval.
        time.sleep(SETTLE_S + phase_s)
        members[3].send("go")
        wait_until(lambda: balanced([m.assignment for m in members]), timeout_s,
                   what=f"four {mode} members split {PARTITIONS} partitions")
        return measure(members[3].subscribed_at, {str(i): m.timeline for i, m in enumerate(members)},
                       existing=["0", "1", "2"])
    finally:
        load.stop()
        for m in members:
            m.send("close")
        for m in members:
            m.close()


def summarize(runs: dict[str, dict[str, list[dict[str, float]]]]) -> dict:
    """Medians per backend and protocol, and ours / Kafka per protocol."""
    med = {b: {p: {k: round(statistics.median(r[k] for r in rs), 4) for k in FIGURES}
               for p, rs in by_p.items()} for b, by_p in runs.items()}
    ratios = {}
    if set(BACKENDS) <= set(med):
        ours, kafka = med[BACKENDS[0]], med[BACKENDS[1]]
        ratios = {p: {k: ratio(ours[p][k], kafka[p][k]) for k in FIGURES}
                  for p in ours if p in kafka}
    return {"median": med, "ratio_ours_over_kafka": ratios}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1, help="discarded runs per backend and protocol")
    ap.add_argument("--rate", type=int, default=2000, help="records/s produced during each run")
    ap.add_argument("--heartbeat-ms", type=int, default=500)
    ap.add_argument("--seed", type=int, default=848, help="seeds the random phase at which the fourth member joins")
    ap.add_argument("--timeout", type=float, default=90.0, help="seconds a rebalance may take before the run fails")
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--protocols", default=",".join(PROTOCOLS))
    a = ap.parse_args(argv)
    backends, protocols = a.backends.split(","), a.protocols.split(",")
    if unknown := (set(backends) - set(BACKENDS)) | (set(protocols) - set(PROTOCOLS)):
        ap.error(f"unknown backend/protocol {sorted(unknown)}; choose from {BACKENDS} and {PROTOCOLS}")
    load, rng = [round(os.getloadavg()[0], 2)], random.Random(a.seed)
    runs: dict[str, dict[str, list[dict[str, float]]]] = {b: {p: [] for p in protocols} for b in backends}
    with contextlib.ExitStack() as stack:
        boots = {b: stack.enter_context(backend(b, a.heartbeat_ms)) for b in backends}
        for i in range(a.warmup + a.repeat):
            for p in protocols:
                # the same join phase on both backends: a classic rebalance waits for the members' next
                # heartbeat, so unpaired phases would make the ratio mostly a draw of the dice
                phase_s = rng.uniform(0, a.heartbeat_ms / 1000)
                for b in backends:
                    r = one_run(boots[b], p, a.heartbeat_ms, a.rate, a.timeout, phase_s)
                    kept = i >= a.warmup
                    if kept:
                        runs[b][p].append(r)
                    print(f"{'run' if kept else 'warm-up'} {i + 1}: {b:10s} {p:11s} rebalance "
                          f"{r['rebalance_s']:.3f} s  pause {r['pause_s']:.3f} s  after notice {r['after_notice_s']:.3f} s",
                          flush=True)
    load.append(round(os.getloadavg()[0], 2))
    result = summarize(runs)
    names = {"rebalance_s": "rebalance s", "pause_s": "pause s", "after_notice_s": "after notice s"}
    both = bool(result["ratio_ours_over_kafka"])
    rows = [("protocol", *(f"{b} {names[k]}" for k in FIGURES for b in backends),
             *([f"ratio {names[k][:-2]}" for k in FIGURES] if both else []))]
    for p in protocols:
        row = [p, *(fmt(result["median"][b][p][k]) for k in FIGURES for b in backends)]
        if rt := result["ratio_ours_over_kafka"].get(p):
            row += [fmt(rt[k]) for k in FIGURES]
        rows.append(tuple(row))
    print(f"\nmedian of {a.repeat} runs, {a.rate} records/s, heartbeat {a.heartbeat_ms} ms, "
          f"load average (1 min) {load[0]} -> {load[1]}")
    print_table(rows)
    emit_json("rebalance_time", {"repeat": a.repeat, "warmup": a.warmup, "rate": a.rate,
                                 "heartbeat_ms": a.heartbeat_ms, "partitions": PARTITIONS,
                                 "loadavg_1m_start_end": load, **result,
                                 "runs": runs})


if __name__ == "__main__":
    main()
