"""The acks=all hops of one record at a time, read off the wire (issue 20): tcpdump on loopback, the partition
leader's port, one clock for every process.

    python -m benchmarks.latency_wire [--impl kafkascope|apache-kafka] [--records 500] [--warmup 300]
                                      [--rate 1000 --seconds 10]

Needs tcpdump and the right to capture on ``lo`` (root). A fresh cluster of ZooKeeper + 3 brokers, a 1-partition
topic with RF=3 and min.insync.replicas=2; a confluent-kafka producer (acks=all, linger.ms=0) and consumer send and
receive one 1 KiB record at a time, as Kafka's EndToEndLatency does (send, wait for the ack, poll until the record
is there), ``--warmup`` records unrecorded, then ``--records`` under capture, 10 ms apart so that records do not
overlap. Each connection to the leader is named by its first request (Produce: the producer; Fetch from a client
id of a replica fetcher: a follower; other Fetch: the consumer). Per record, from the Produce request's arrival:

* ``produce -> follower 1/2 data``: the leader's answers to the followers' parked fetches (DelayedFetch woken by
  the append);
* ``follower turnaround``: a follower's answer received -> its next Fetch sent (append, then fetch again: the fetch
  that carries its new log end offset, ReplicaFetcherThread);
* ``produce -> last follower fetch``: the moment the high watermark can move (Partition.maybeIncrementLeaderHW);
* ``produce -> consumer data`` and ``produce -> produce response`` (DelayedProduce).

Also per broker: CPU time per record (user and system), involuntary context switches and run-queue wait
(/proc/<pid>/schedstat). Medians are printed; the last line is one JSON object.

With ``--rate R`` the load is benchmarks.vs_apache's e2e instead (cluster_throughput.e2e_latency: open loop at R
records/s, linger.ms=5, 5 in flight, all to the one partition, so ~5 records a batch at 1,000/s), captured
whole, warm-up second included: the hops are then per Produce request (a batch), the client figure is the e2e
p50 of the records, and CPU is per batch.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import struct
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from benchmarks._common import emit_json, fmt
from common.polling import wait_until

VALUE = 1024
_PCAP_MAGIC_US = 0xA1B2C3D4
_LINK_ETHERNET, _LINK_LINUX_SLL = 1, 113
HOPS = ("produce -> follower 1 data", "produce -> follower 2 data", "follower turnaround",
        "produce -> last follower fetch", "produce -> consumer data", "produce -> produce response")


@dataclass(frozen=True)
class Segment:
    """A TCP segment with payload: capture time (s), ports, payload length, and its first bytes."""

    t: float
    src: int
    dst: int
    length: int
    head: bytes


def read_pcap(data: bytes) -> list[Segment]:
    """TCP segments with a payload from a classic pcap file (microsecond timestamps, IPv4)."""
    if len(data) < 24 or struct.unpack_from("<I", data, 0)[0] != _PCAP_MAGIC_US:
        raise ValueError("not a little-endian microsecond pcap file")
    link = struct.unpack_from("<I", data, 20)[0]
    skip = {_LINK_ETHERNET: 14, _LINK_LINUX_SLL: 16}.get(link, 0)
    out, off = [], 24
    while off + 16 <= len(data):
        sec, usec, incl, _orig = struct.unpack_from("<IIII", data, off)
        pkt, off = data[off + 16:off + 16 + incl], off + 16 + incl
        ip = pkt[skip:]
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        ihl = (ip[0] & 15) * 4
        total = struct.unpack_from(">H", ip, 2)[0]
        tcp = ip[ihl:]
        src, dst = struct.unpack_from(">HH", tcp, 0)
        doff = (tcp[12] >> 4) * 4
        payload = total - ihl - doff
        if payload > 0:
            out.append(Segment(sec + usec / 1e6, src, dst, payload, bytes(tcp[doff:doff + 64])))
    return out


def roles(segments: Iterable[Segment], port: int) -> dict[int, str]:
    """Client port -> producer / follower / consumer, from the first request frame seen on each connection."""
    out: dict[int, str] = {}
    for s in segments:
        if s.dst != port or s.src in out or len(s.head) < 14:
            continue
        api_key = struct.unpack_from(">h", s.head, 4)[0]
        n = struct.unpack_from(">h", s.head, 12)[0]
        client_id = s.head[14:14 + n].decode(errors="replace") if n > 0 else ""
        if api_key == 0:
            out[s.src] = "producer"
        elif api_key == 1:
            out[s.src] = "follower" if "fetcher" in client_id else "consumer"
    return out


def record_hops(segments: list[Segment], port: int, min_record_bytes: int = VALUE) -> dict[str, list[float]]:
    """Per record (a Produce request carrying at least `min_record_bytes`), the HOPS in seconds."""
    who = roles(segments, port)
    events = sorted((s.t, s.dst == port, who.get(s.src if s.dst == port else s.dst, "?"),
                     s.src if s.dst == port else s.dst, s.length) for s in segments if port in (s.src, s.dst))
    starts = [i for i, (_, inbound, role, _, n) in enumerate(events)
              if inbound and role == "producer" and n >= min_record_bytes]
    hops: dict[str, list[float]] = {h: [] for h in HOPS}
    for k, i in enumerate(starts):
        t0 = events[i][0]
        window = events[i:starts[k + 1] if k + 1 < len(starts) else len(events)]
        to_followers = [e for e in window if not e[1] and e[2] == "follower" and e[4] >= min_record_bytes]
        answer = [e for e in window if not e[1] and e[2] == "producer"]
        to_consumer = [e for e in window if not e[1] and e[2] == "consumer" and e[4] >= min_record_bytes]
        if len(to_followers) < 2 or not answer or not to_consumer:
            continue
        next_fetches = []
        for sent in to_followers[:2]:
            nxt = next((e for e in window if e[1] and e[3] == sent[3] and e[0] > sent[0]), None)
            if nxt is not None:
                hops["follower turnaround"].append(nxt[0] - sent[0])
                next_fetches.append(nxt[0])
        hops["produce -> follower 1 data"].append(to_followers[0][0] - t0)
        hops["produce -> follower 2 data"].append(to_followers[1][0] - t0)
        if len(next_fetches) == 2:
            hops["produce -> last follower fetch"].append(max(next_fetches) - t0)
        hops["produce -> consumer data"].append(to_consumer[0][0] - t0)
        hops["produce -> produce response"].append(answer[0][0] - t0)
    return hops


def _proc_figures(pid: int) -> dict[str, float]:
    """CPU seconds (user, system), context switches and run-queue wait of every thread of `pid`."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    out = {"user_s": int(fields[11]) / tick, "system_s": int(fields[12]) / tick, "involuntary": 0.0}
    for task in os.listdir(f"/proc/{pid}/task"):
        for line in Path(f"/proc/{pid}/task/{task}/status").read_text().splitlines():
            if line.startswith("nonvoluntary_ctxt_switches:"):
                out["involuntary"] += int(line.split()[1])
    _run, wait, _ = map(int, Path(f"/proc/{pid}/schedstat").read_text().split())
    out["runqueue_wait_s"] = wait / 1e9
    return out


def _one_record(producer, consumer, topic: str, seq: int) -> float:
    """EndToEndLatency's loop body: send, wait for the ack, poll until this record arrives (seconds)."""
    value = struct.pack(">q", seq) + b"x" * (VALUE - 8)
    start = time.perf_counter()
    producer.produce(topic, value, partition=0)
    if producer.flush(10) != 0:
        raise RuntimeError("produce not acknowledged within 10 s")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and m.error() is None and struct.unpack_from(">q", m.value())[0] == seq:
            return time.perf_counter() - start
    raise RuntimeError("record not consumed within 10 s")


def _positioned(producer, consumer, topic: str, timeout_s: float = 30) -> None:
    """Marker records (sequence -1) until the consumer receives one: a consumer still resolving its end offset
    would skip the first record and charge its start-up to it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        producer.produce(topic, struct.pack(">q", -1), partition=0)
        producer.flush(10)
        m = consumer.poll(0.5)
        if m is not None and m.error() is None:
            return
    raise RuntimeError(f"the consumer received no marker record within {timeout_s:g} s")


def run(impl: str, records: int, warmup: int, rate: int = 0, seconds: float = 10.0) -> dict:
    from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient

    from benchmarks.cluster_throughput import create_replicated_topic, e2e_latency, warm_up_offsets_topic
    from benchmarks.vs_apache import E2E_PRODUCER
    from kafkascope.local.launcher import ClusterLauncher

    tcpdump = shutil.which("tcpdump")
    if tcpdump is None:
        raise SystemExit("tcpdump is not installed (apt-get install tcpdump)")
    with tempfile.TemporaryDirectory(prefix=f"latency-wire-{impl}-") as tmp:
        c = ClusterLauncher(Path(tmp), brokers=3, impl=impl, broker_props={"group.initial.rebalance.delay.ms": 0})
        try:
            c.prepare().start_all(timeout_s=120)
            bs = c.bootstrap
            warm_up_offsets_topic(bs)
            create_replicated_topic(bs, "wire", 1, 3, {"min.insync.replicas": "2"})
            admin = AdminClient({"bootstrap.servers": bs})
            # The full ISR was seen on one broker; the one this client asks may not know the leader yet (-1).
            found = wait_until(lambda: _leader(admin, "wire"), 30.0, what="a leader of wire-0 in every answer")
            assert found is not None  # wait_until returns a truthy value or raises
            leader = found[0]
            port = c.broker_port(leader)
            if not rate:
                producer = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 0,
                                     "enable.idempotence": False})
                consumer = Consumer({"bootstrap.servers": bs, "group.id": "latency-wire", "enable.auto.commit": False,
                                     "fetch.wait.max.ms": 500, "fetch.min.bytes": 1})
                consumer.assign([TopicPartition("wire", 0, OFFSET_END)])
                _positioned(producer, consumer, "wire")
                for seq in range(warmup):
                    _one_record(producer, consumer, "wire", seq)
            else:  # the JVM's and the page cache's warm-up: one unrecorded run of the same load
                e2e_latency(bs, "wire", "all", rate, seconds / 2, 1.0, VALUE, E2E_PRODUCER)
            pcap = Path(tmp) / "lo.pcap"
            dump = subprocess.Popen([tcpdump, "-i", "lo", "-s", "128", "-U", "-w", str(pcap), f"tcp port {port}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            time.sleep(1.0)  # tcpdump has no readiness signal on stdout; its capture starts within this
            pids = {b: pid for b in c.broker_ids if (pid := c.pid(b))}
            before = {b: _proc_figures(pid) for b, pid in pids.items()}
            rounds: list[float] = []
            if rate:
                e2e = e2e_latency(bs, "wire", "all", rate, seconds, 1.0, VALUE, E2E_PRODUCER)
                rounds = [e2e["p50_ms"] / 1e3] if e2e.get("p50_ms") is not None else []
            else:
                for seq in range(warmup, warmup + records):
                    rounds.append(_one_record(producer, consumer, "wire", seq))
                    time.sleep(0.01)
            after = {b: _proc_figures(pid) for b, pid in pids.items()}
            time.sleep(0.3)  # the last segments reach the capture file
            dump.terminate()
            dump.wait(10)
            segments = read_pcap(pcap.read_bytes())
            if not rate:
                consumer.close()
        finally:
            c.shutdown()
    hops = record_hops(segments, port)
    units = len(hops["produce -> produce response"]) if rate else records  # per batch with --rate
    per_broker = {("leader" if b == leader else f"follower {b}"): {
        k: round((after[b][k] - before[b][k]) / max(1, units) * (1 if k == "involuntary" else 1e3), 3)
        for k in before[b]} for b in before}
    return {"impl": impl, "records": records, "client_round_trip_ms": _stats(rounds),
            "hops_ms": {h: _stats(v) for h, v in hops.items()}, "per_record": per_broker,
            "loadavg_1m": os.getloadavg()[0]}


def _leader(admin, topic: str) -> tuple[int] | None:
    """(leader of partition 0,) once the answering broker knows it; a tuple, since broker 0 is falsy."""
    leader = admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader
    return (leader,) if leader >= 0 else None


def _stats(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "p50": None, "mean": None, "p90": None}
    ordered = sorted(values)
    return {"n": len(values), "p50": round(statistics.median(values) * 1e3, 3),
            "mean": round(statistics.fmean(values) * 1e3, 3), "p90": round(ordered[int(len(ordered) * 0.9)] * 1e3, 3)}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m benchmarks.latency_wire", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--impl", default="kafkascope", choices=("kafkascope", "apache-kafka"))
    p.add_argument("--records", type=int, default=500)
    p.add_argument("--warmup", type=int, default=300)
    p.add_argument("--rate", type=int, default=0, help="records/s of vs_apache's e2e load (0: one at a time)")
    p.add_argument("--seconds", type=float, default=10.0, help="with --rate: the measured run's length")
    args = p.parse_args(argv)
    load = os.getloadavg()[0]
    r = run(args.impl, args.records, args.warmup, args.rate, args.seconds)
    what = (f"{args.rate} records/s, linger.ms=5, for {args.seconds:g} s" if args.rate
            else f"one record at a time, {args.records} records")
    print(f"{args.impl}: {what}, acks=all, RF=3, min.insync.replicas=2, {VALUE} B; "
          f"load {load:.1f}->{r['loadavg_1m']:.1f}")
    print(f"  client send..consumed: p50 {fmt(r['client_round_trip_ms']['p50'])} ms, "
          f"mean {fmt(r['client_round_trip_ms']['mean'])} ms" + (" (the e2e p50)" if args.rate else ""))
    for hop, s in r["hops_ms"].items():
        print(f"  {hop:32s} p50 {fmt(s['p50']):>7} ms  mean {fmt(s['mean']):>7}  p90 {fmt(s['p90']):>7}  (n={s['n']})")
    for who, f in r["per_record"].items():
        unit = "batch" if args.rate else "record"
        print(f"  {who:11s} per {unit}: CPU user {fmt(f['user_s'])} ms, system {fmt(f['system_s'])} ms, "
              f"run-queue wait {fmt(f['runqueue_wait_s'])} ms, involuntary switches {fmt(f['involuntary'])}")
    emit_json("latency_wire", r)
    return r


if __name__ == "__main__":
    main()
