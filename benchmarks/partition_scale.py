"""The cost curve in partitions (issue 20): ours vs Apache Kafka 3.9 (ZooKeeper mode), 3 brokers, same run.

    python -m benchmarks.partition_scale [--sizes 1000,3000,10000] [--impls kafkascope,apache-kafka] [--rf 3]
                                         [--kafka-heap-opts "-Xmx1G -Xms1G"]

For each implementation and each size N a fresh cluster is started with the `kafkascope cluster` launcher
(kafkascope/local/launcher.ClusterLauncher: one ZooKeeper, ``--brokers`` brokers; the clusters run one after the
other, never at once), then, measured from this process:

* create: one CreateTopics of N partitions spread over topics of 100 partitions (RF ``--rf``), until every
  partition has a leader and a full ISR (polled via Metadata);
* Metadata: the time of a Metadata request for all topics, two ways (median of 5 each): on the wire (one
  Metadata v4 request from a plain socket, until the last byte of the answer: the broker's share) and through
  librdkafka's list_topics, which also builds a Python object per partition in this process (the client's
  share; at 10,000 partitions this process's garbage collector alone took 11 -> 30 ms of it in one experiment);
* scrape: ``GET /metrics`` of each broker (ours: ``prometheus.listener``; Kafka: the jmx_exporter agent the
  launcher attaches, launcher.metrics_url), time and size, median of 3 after one unrecorded scrape, mean over
  the brokers;
* memory: growth of the brokers' RSS (/proc/PID/status VmRSS, the whole process tree) from before the topics
  existed to after, per partition replica hosted;
* failover: kill -9 of a broker (not the controller) leading about a third of the partitions; time until every
  partition has a live leader (polled via Metadata). It includes the ZooKeeper session timeout (the controller
  learns of the death only when the session expires), ``--zk-session-timeout-ms`` for both (default 6000);
  and from the first poll that shows one of the killed broker's partitions led elsewhere until every partition is
  led (``failover_after_first_s``): the controller's share without the session expiry, which ZooKeeper times on
  its tick, so "failover less the session timeout" spreads by a second or more between runs at any size (0 when
  one poll saw the first and the last);
* restart: that broker started again; time from the spawn until it is back in every ISR;
* controlled shutdown: SIGTERM of the broker leading the most partitions, until the process has exited;
* start-up: that broker started again (its logs closed cleanly: no recovery), until it is back in every ISR.

Prints one table per figure with the ratio ours/Kafka at each size and the growth factor between sizes, with its
exponent (log growth / log size step: 1.0 is linear, above 1 grows faster than linearly). The last line is one
JSON object. Every wait is bounded (the bounds grow with N).
"""

from __future__ import annotations

import argparse
import math
import os
import socket
import statistics
import struct
import tempfile
import time
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks._common import emit_json, fmt, print_table, ratio
from common.polling import wait_until
from kafkascope.local.apache_kafka import ZK_VERSION, ensure_kafka
from kafkascope.local.broker_process import proc_status_kb
from kafkascope.local.stack.local import MetricsClusterLauncher

PER_TOPIC = 100
SUPERLINEAR_EXPONENT = 1.15  # noise margin: two runs on a loaded 2-core box differ by more than 10 %

# (key, label, unit); smaller is better for every figure. Per-unit figures ("per" in the key) stay flat when the
# total grows linearly, so the faster-than-linear check reads their totals instead (rss_growth_mb).
FIGURES = [
    ("create_s", "create N partitions (s)", "s"),
    ("metadata_wire_ms", "Metadata, all topics, on the wire (ms)", "ms"),
    ("metadata_ms", "Metadata, all topics, via list_topics (ms)", "ms"),
    ("scrape_ms", "/metrics scrape per broker (ms)", "ms"),
    ("scrape_kb", "/metrics size per broker (kB)", "kB"),
    ("rss_growth_mb", "RSS growth, all brokers together (MB)", "MB"),
    ("rss_kib_per_replica", "RSS growth per partition replica (KiB)", "KiB"),
    ("failover_s", "leader failover after kill -9 (s)", "s"),
    ("failover_beyond_session_s", "failover less the ZooKeeper session timeout (s)", "s"),
    ("failover_after_first_s", "failover from the first moved leader to the last (s)", "s"),
    ("restart_s", "restart after kill -9 until in every ISR (s)", "s"),
    ("shutdown_s", "controlled shutdown, SIGTERM to exit (s)", "s"),
    ("start_s", "start after the controlled shutdown, until in every ISR (s)", "s"),
]


# ---- pure parts (unit-tested in tests/benchmarks/test_partition_scale.py) ---------------------------------------

def topic_plan(partitions: int, per_topic: int = PER_TOPIC, prefix: str = "scale") -> list[tuple[str, int]]:
    """N partitions as topics of `per_topic` partitions (the last one takes the remainder)."""
    if partitions <= 0 or per_topic <= 0:
        raise ValueError("partitions and per_topic must be positive")
    plan, left, i = [], partitions, 0
    while left > 0:
        n = min(per_topic, left)
        plan.append((f"{prefix}-{i:04d}", n))
        left -= n
        i += 1
    return plan


def growth(by_size: dict[int, float | None]) -> list[dict]:
    """Between consecutive sizes: value factor, size factor and the exponent log(factor)/log(size factor)
    (1 = linear; None where a value is missing or not positive)."""
    sizes = sorted(by_size)
    out = []
    for a, b in zip(sizes, sizes[1:], strict=False):
        va, vb = by_size[a], by_size[b]
        factor = vb / va if va and vb and va > 0 and vb > 0 else None
        exponent = math.log(factor) / math.log(b / a) if factor is not None and b != a else None
        out.append({"from": a, "to": b, "factor": None if factor is None else round(factor, 3),
                    "size_factor": round(b / a, 3),
                    "exponent": None if exponent is None else round(exponent, 3),
                    "superlinear": None if exponent is None else exponent > SUPERLINEAR_EXPONENT})
    return out


def prometheus_series(body: bytes) -> int:
    """Samples in a Prometheus text exposition (lines that are neither blank nor comments)."""
    return sum(1 for line in body.splitlines() if line.strip() and not line.lstrip().startswith(b"#"))


def children_of(stats: Iterable[tuple[int, int]], root: int) -> set[int]:
    """`root` and all its descendants, from (pid, ppid) pairs."""
    kids: dict[int, list[int]] = {}
    for pid, ppid in stats:
        kids.setdefault(ppid, []).append(pid)
    seen, todo = {root}, [root]
    while todo:
        for c in kids.get(todo.pop(), []):
            if c not in seen:
                seen.add(c)
                todo.append(c)
    return seen


def parse_ppid(stat_text: str) -> int:
    """The ppid field of /proc/PID/stat (after the parenthesised command name, which may hold spaces)."""
    return int(stat_text.rsplit(")", 1)[1].split()[1])


def leaders_by_broker(partitions: dict[tuple[str, int], tuple[int, list[int]]]) -> dict[int, int]:
    """(topic, partition) -> (leader, isr) into leader id -> partitions led."""
    out: dict[int, int] = {}
    for leader, _isr in partitions.values():
        out[leader] = out.get(leader, 0) + 1
    return out


def all_led(partitions: dict[tuple[str, int], tuple[int, list[int]]], expected: int, dead: int | None) -> bool:
    """Every one of `expected` partitions has a leader that is not the `dead` broker."""
    return len(partitions) == expected and all(ld >= 0 and ld != dead for ld, _ in partitions.values())


def any_moved(before: dict[tuple[str, int], tuple[int, list[int]]],
              now: dict[tuple[str, int], tuple[int, list[int]]], dead: int) -> bool:
    """Some partition the `dead` broker led in `before` has a live leader other than it in `now`."""
    return any(ld == dead and now.get(tp, (-1, []))[0] not in (-1, dead) for tp, (ld, _) in before.items())


def all_in_isr(partitions: dict[tuple[str, int], tuple[int, list[int]]], expected: int, rf: int,
               broker: int | None = None) -> bool:
    """Every partition led with an ISR of `rf` (and containing `broker` when given)."""
    return len(partitions) == expected and all(
        ld >= 0 and len(isr) == rf and (broker is None or broker in isr) for ld, isr in partitions.values())


def metadata_request(correlation_id: int, client_id: bytes = b"partition-scale") -> bytes:
    """A size-prefixed Metadata v4 request for all topics (header v1; topics null, no auto-creation). v4: the
    oldest version Kafka 4 still serves (KIP-896), non-flexible, so it is written by hand in a few bytes."""
    body = struct.pack(">hhih", 3, 4, correlation_id, len(client_id)) + client_id + struct.pack(">ib", -1, 0)
    return struct.pack(">i", len(body)) + body


# ---- I/O ---------------------------------------------------------------------------------------------------------

def tree_rss_kb(pid: int) -> int:
    """VmRSS of `pid` and its descendants (a launcher may start the broker under a wrapper)."""
    pairs = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                pairs.append((int(d.name), parse_ppid((d / "stat").read_text())))
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile
    total = 0
    for p in children_of(pairs, pid):
        try:
            total += proc_status_kb(p, "VmRSS")
        except (OSError, KeyError):
            continue
    return total


def snapshot(admin: Any, timeout_s: float = 30.0) -> tuple[dict[tuple[str, int], tuple[int, list[int]]], int]:
    """Every partition of the scale-* topics -> (leader, isr), and the controller id."""
    md = admin.list_topics(timeout=timeout_s)
    parts = {(t, p): (m.leader, list(m.isrs)) for t, tm in md.topics.items() if t.startswith("scale-") and
             tm.error is None for p, m in tm.partitions.items()}
    return parts, md.controller_id


def metadata_wire_ms(host: str, port: int, n: int = 5, timeout_s: float = 60.0) -> tuple[float, int]:
    """(median ms, response bytes) of `n` Metadata requests for all topics on one connection, after one
    unrecorded: from the send until the answer's last byte is read."""
    with socket.create_connection((host, port), timeout=timeout_s) as s:
        times, size = [], 0
        for i in range(n + 1):
            t = time.perf_counter()
            s.sendall(metadata_request(i))
            size = _read_frame(s)
            if i:
                times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), size


def _read_frame(s: socket.socket) -> int:
    head = s.recv(4, socket.MSG_WAITALL)
    if len(head) != 4:
        raise ConnectionError("the broker closed the connection before answering Metadata")
    size = left = struct.unpack(">i", head)[0]
    while left > 0:
        chunk = s.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the broker closed the connection in the middle of a Metadata answer")
        left -= len(chunk)
    return size


def scrape_timeout_s(size: int) -> float:
    """A scrape's bound: 60 s up to 1,000 partitions, growing with them (Kafka's jmx_exporter took 8.6–49.8 s per
    scrape at 10,000)."""
    return 60.0 * max(1.0, size / 1000)


def scrape(url: str, n: int = 3, timeout_s: float = 60.0) -> tuple[float, int, int]:
    """(median ms, bytes, series) over `n` scrapes after one unrecorded one."""
    urllib.request.urlopen(url, timeout=timeout_s).read()
    times, body = [], b""
    for _ in range(n):
        t = time.perf_counter()
        body = urllib.request.urlopen(url, timeout=timeout_s).read()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), len(body), prometheus_series(body)


def create_all(admin: Any, size: int, rf: int, bound: float) -> float:
    from confluent_kafka.admin import NewTopic

    plan = topic_plan(size)
    t0 = time.perf_counter()
    futs = admin.create_topics([NewTopic(t, n, rf) for t, n in plan], operation_timeout=bound, request_timeout=bound)
    for f in futs.values():
        f.result(bound)
    wait_until(lambda: all_in_isr(snapshot(admin)[0], size, rf), bound, 0.2,
               what=f"{size} partitions led with a full ISR", retry_on=(Exception,))
    return time.perf_counter() - t0


def _progress(impl: str, size: int, done: str, out: dict) -> None:
    """The figures so far, as each phase ends: an interrupted run (a 10,000-partition phase that does not end
    in time) still leaves them in the log."""
    print(f"    {impl} @ {size:,} after {done}: " + ", ".join(f"{k} {fmt(round(v, 3) if isinstance(v, float) else v)}"
                                                         for k, v in out.items()), flush=True)


def measure_size(impl: str, size: int, args: argparse.Namespace) -> dict:
    """One fresh cluster, every figure at `size` partitions."""
    from confluent_kafka.admin import AdminClient

    bound = 120 + size * 0.06  # generous: Kafka creates ~100 partitions/s here under load
    out: dict[str, Any] = {"loadavg_1m_start": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix=f"partition-scale-{impl}-") as tmp:
        # the same session timeout for both (the launcher gives Kafka 6 s; ours defaults to Kafka's 18 s): a killed
        # broker's leaders move only once its ZooKeeper session expires, so it bounds the failover from below
        c = MetricsClusterLauncher(Path(tmp), brokers=args.brokers, impl=impl,
                                   broker_props={"zookeeper.session.timeout.ms": args.zk_session_timeout_ms})
        phase = "start"
        try:
            c.start_all(timeout_s=120)
            # log_level 2: the refused connections to the killed broker are expected
            # socket.timeout.ms: librdkafka's 60 s default times out a CreateTopics of 10,000 partitions on our broker
            admin = AdminClient({"bootstrap.servers": c.bootstrap, "log_level": 2,
                                 "socket.timeout.ms": min(int(bound * 1000), 300_000)})  # its maximum
            ids = c.broker_ids
            rss0 = {b: tree_rss_kb(c.pid(b) or 0) for b in ids}
            phase = "create"
            out["create_s"] = create_all(admin, size, args.rf, bound)
            _progress(impl, size, phase, out)
            phase = "metadata"
            host, port = c.bootstrap.split(",")[0].rsplit(":", 1)
            out["metadata_wire_ms"], out["metadata_bytes"] = metadata_wire_ms(host, int(port), timeout_s=bound)
            mds = []
            for _ in range(5):
                t = time.perf_counter()
                admin.list_topics(timeout=bound)
                mds.append((time.perf_counter() - t) * 1000)
            out["metadata_ms"] = statistics.median(mds)
            _progress(impl, size, phase, out)
            phase = "scrape"
            out.update(_scrapes(c, ids, size))
            rss1 = {b: tree_rss_kb(c.pid(b) or 0) for b in ids}
            out["rss_mb_per_broker"] = round(statistics.fmean(rss1.values()) / 1024, 1)
            out["rss_growth_mb"] = (sum(rss1.values()) - sum(rss0.values())) / 1024
            out["rss_kib_per_replica"] = (sum(rss1.values()) - sum(rss0.values())) / (size * args.rf)
            _progress(impl, size, phase, out)
            phase = "kill -9, failover and restart"
            out.update(_kill_and_restart(c, admin, size, args.rf, bound))
            # the controller's own share: the session expiry is a constant both sides wait for
            out["failover_beyond_session_s"] = out["failover_s"] - args.zk_session_timeout_ms / 1000
            _progress(impl, size, phase, out)
            phase = "controlled shutdown"
            out.update(_controlled_shutdown(c, admin, bound))
            _progress(impl, size, phase, out)
            if out.get("shutdown_how") == "stopped":
                phase = "start-up after the controlled shutdown"
                out["start_s"] = _started(c, admin, out["shutdown_broker"], size, args.rf, bound)
        except Exception as e:  # keep what was measured; the table shows n/a from here on
            out["error"] = f"{phase}: {type(e).__name__}: {e}"[:500]
        finally:
            c.shutdown()
    out["loadavg_1m_end"] = os.getloadavg()[0]
    return out


def _scrapes(c: MetricsClusterLauncher, ids: list[int], size: int) -> dict:
    per = []
    for b in ids:
        url = c.scrape_url(b)
        if url:
            per.append(scrape(url, timeout_s=scrape_timeout_s(size)))
    if not per:
        return {"scrape_ms": None, "scrape_kb": None, "scrape_series": None}
    return {"scrape_ms": statistics.fmean(p[0] for p in per), "scrape_kb": statistics.fmean(p[1] for p in per) / 1000,
            "scrape_series": round(statistics.fmean(p[2] for p in per))}


def _kill_and_restart(c: MetricsClusterLauncher, admin: Any, size: int, rf: int, bound: float) -> dict:
    parts, controller = snapshot(admin)
    led = leaders_by_broker(parts)
    candidates = [b for b in c.broker_ids if b != controller] or c.broker_ids
    victim = min(candidates, key=lambda b: abs(led.get(b, 0) - size / len(c.broker_ids)))
    c.kill(victim)
    t_kill = time.perf_counter()
    first: list[float] = []

    def led_again() -> bool:
        now = snapshot(admin, 10)[0]
        if not first and any_moved(parts, now, victim):
            first.append(time.perf_counter())
        return all_led(now, size, victim)

    wait_until(led_again, bound, 0.1, what=f"every partition led by a live broker after killing {victim}",
               retry_on=(Exception,))
    t_all = time.perf_counter()
    failover = t_all - t_kill
    restart = _started(c, admin, victim, size, rf, bound)
    return {"failover_s": failover, "failover_after_first_s": t_all - (first[0] if first else t_all),
            "restart_s": restart, "killed": victim,
            "killed_led": led.get(victim, 0), "controller": controller}


def _controlled_shutdown(c: MetricsClusterLauncher, admin: Any, bound: float) -> dict:
    parts, _ = snapshot(admin)
    led = leaders_by_broker(parts)
    target = max(c.broker_ids, key=lambda b: led.get(b, 0))
    t0 = time.perf_counter()
    how = c.stop(target, timeout_s=bound)
    return {"shutdown_s": time.perf_counter() - t0 if how == "stopped" else None, "shutdown_how": how,
            "shutdown_led": led.get(target, 0), "shutdown_broker": target}


def _started(c: MetricsClusterLauncher, admin: Any, broker: int, size: int, rf: int, bound: float) -> float:
    """Seconds from spawning a stopped or killed `broker` until it is back in every ISR."""
    t0 = time.perf_counter()
    c.start(broker, timeout_s=bound)
    wait_until(lambda: all_in_isr(snapshot(admin, 10)[0], size, rf, broker), bound, 0.2,
               what=f"broker {broker} back in every ISR", retry_on=(Exception,))
    return time.perf_counter() - t0


# ---- report ------------------------------------------------------------------------------------------------------

def figure_rows(key: str, impls: list[str], sizes: list[int], res: dict[str, dict[int, dict]]) -> list[tuple]:
    """Rows for one figure: size, each impl's value, ours/Kafka, and each impl's growth from the previous size."""
    head = ("partitions", *impls, "ours/Kafka", *(f"{i} growth (exp)" for i in impls))
    rows: list[tuple] = [head]
    grow = {i: {g["to"]: g for g in growth({s: res[i].get(s, {}).get(key) for s in sizes})} for i in impls}
    for s in sizes:
        vals = [res[i].get(s, {}).get(key) for i in impls]
        r = ratio(res.get("kafkascope", {}).get(s, {}).get(key), res.get("apache-kafka", {}).get(s, {}).get(key))
        gcols = []
        for i in impls:
            g = grow[i].get(s)
            if g is None:
                gcols.append("")       # the first size: nothing to grow from
            else:
                gcols.append("n/a" if g["factor"] is None else f"x{fmt(g['factor'])} ({fmt(g['exponent'])})")
        rows.append((f"{s:,}", *(fmt(None if v is None else round(v, 3)) for v in vals), fmt(r), *gcols))
    return rows


def superlinear(impls: list[str], sizes: list[int], res: dict[str, dict[int, dict]]) -> list[str]:
    """'impl figure a->b (exponent)' for every step growing faster than linearly."""
    out = []
    for key, _label, _unit in FIGURES:
        if "_per_" in key:
            continue
        for i in impls:
            for g in growth({s: res[i].get(s, {}).get(key) for s in sizes}):
                if g["superlinear"]:
                    out.append(f"{i} {key} {g['from']}->{g['to']} (exponent {g['exponent']})")
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.partition_scale", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,3000,10000", help="partition counts, comma-separated")
    p.add_argument("--impls", default="kafkascope,apache-kafka")
    p.add_argument("--rf", type=int, default=3)
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--zk-session-timeout-ms", type=int, default=6000,
                   help="zookeeper.session.timeout.ms of every broker, both implementations (default 6000)")
    p.add_argument("--kafka-heap-opts", default="",
                   help="Kafka's brokers' KAFKA_HEAP_OPTS (default: the launcher's -Xmx512m; at 10,000 partitions "
                        "Kafka needs its own default, \"-Xmx1G -Xms1G\", to serve the scrape)")
    return p


def parse_sizes(text: str) -> list[int]:
    sizes = sorted({int(s) for s in text.split(",") if s.strip()})
    if not sizes or sizes[0] <= 0:
        raise argparse.ArgumentTypeError(f"--sizes: positive partition counts expected, got {text!r}")
    return sizes


def main(argv: list[str] | None = None) -> dict:
    p = build_parser()
    args = p.parse_args(argv)
    try:
        sizes = parse_sizes(args.sizes)
    except (ValueError, argparse.ArgumentTypeError) as e:
        p.error(str(e))
    if not 1 <= args.rf <= args.brokers:
        p.error(f"--rf must be between 1 and --brokers ({args.brokers})")
    impls = [i.strip() for i in args.impls.split(",") if i.strip()]
    if "apache-kafka" in impls:
        ensure_kafka(ZK_VERSION)
    if args.kafka_heap_opts:
        os.environ["KAFKA_HEAP_OPTS"] = args.kafka_heap_opts   # read by the launcher, as kafka-server-start.sh
    res: dict[str, dict[int, dict]] = {i: {} for i in impls}
    for size in sizes:
        for impl in impls:
            print(f"  {impl} @ {size:,} partitions (load {os.getloadavg()[0]:.1f}) ...", flush=True)
            try:
                res[impl][size] = measure_size(impl, size, args)
            except Exception as e:  # one size failing (e.g. the machine cannot hold it) keeps the others
                res[impl][size] = {"error": f"{type(e).__name__}: {e}"[:500]}
            print(f"  {impl} @ {size:,}: " + ", ".join(f"{k} {fmt(v if not isinstance(v, float) else round(v, 3))}"
                                                       for k, v in res[impl][size].items()), flush=True)
    print(f"\npartition cost curve, {args.brokers} brokers, RF={args.rf}, ours vs Apache Kafka {ZK_VERSION} "
          f"(ZooKeeper mode); growth 'xF (e)': factor from the previous size, exponent e (1 = linear)")
    for key, label, _unit in FIGURES:
        print(f"\n{label}")
        print_table(figure_rows(key, impls, sizes, res))
    worse = superlinear(impls, sizes, res)
    print(f"\nfaster than linear (exponent > {SUPERLINEAR_EXPONENT:.2f}): {'; '.join(worse) or 'none'}")
    result = {"settings": {**vars(args), "sizes": sizes}, "results": {i: {str(s): v for s, v in r.items()}
                                                                       for i, r in res.items()},
              "growth": {i: {k: growth({s: res[i].get(s, {}).get(k) for s in sizes}) for k, _, _ in FIGURES}
                         for i in impls},
              "superlinear": worse}
    emit_json("partition_scale", result)
    return result


if __name__ == "__main__":
    main()
