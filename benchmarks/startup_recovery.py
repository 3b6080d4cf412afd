"""Startup with many partitions, and restart after kill -9 with a large log.

    python -m benchmarks.startup_recovery [--partitions 1000] [--gb 1.0] [--write-seconds 60]

Ready = time from spawning ``python -m broker`` to its port accepting connections *and* a Metadata
request (all topics) answering with every partition (the broker recovers logs before it listens).

* baseline: a fresh broker with no user topics (the internal offsets topic has 1 partition), measured
  in the same run — the fixed cost of interpreter + imports + asyncio;
* (a) clean start with ``--partitions`` partitions (created as topics of 100 partitions with
  confluent-kafka AdminClient, then a clean SIGTERM stop);
* (b) crash recovery: ``--gb`` GB of 1 KiB records produced into one partition (bounded by
  ``--write-seconds``), ``kill -9``, then restart; ready additionally requires ListOffsets(latest) to
  return the number of records produced (so recovery really ran).

Targets: each < 10 s. Ratios printed against the baseline start. The last line is one JSON object.

    python -m benchmarks.startup_recovery --many 20000 [--many-baseline 1000]

runs instead the many-partitions mode (issue 14: a broker with ~20,000 partitions could not start again
after a kill -9, out of file descriptors): for ``--many-baseline`` partitions, then ``--many``, in the same
run, each on a fresh standalone broker: create them (CreateTopics of at most 10,000 partitions per request),
write one small record to every 20th partition, stop cleanly and start (timed as above), write again,
``kill -9`` and start again (ready also requires ListOffsets to find both records), then write a record to
every partition; after each start and write the broker's open descriptors are counted (``/proc/PID/fd``).
Ratios: ``--many`` against the baseline count.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks._common import MB, OUR_BROKER_PROPS, create_topic, emit_json, fmt, produce, ratio, verdict
from broker.log.records import Record, build_batch
from broker.protocol.handlers.admin import MAX_PARTITIONS_PER_BATCH
from kafkascope.local.broker_process import BrokerProcess
from kafkascope.local.wire import WireClient

TARGET_S = 10.0
PER_TOPIC = 100
MANY_PER_TOPIC = 1000
WRITE_EVERY = 20  # the many-partitions mode writes to every 20th partition


def _metadata_partitions(port: int) -> int:
    with WireClient(port) as c:
        md = c.call(3, 1, {"topics": None})
        return sum(len(t.partitions) for t in md.topics)


def _latest_offset(port: int, topic: str) -> int:
    with WireClient(port) as c:
        r = c.call(2, 1, {"replica_id": -1, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
        return r.topics[0].partitions[0].offset


def timed_start(b: BrokerProcess, expect_partitions: int, topic: str | None = None,
                expect_offset: int | None = None) -> dict:
    t0 = time.perf_counter()
    b.start(timeout_s=120)
    t_port = time.perf_counter() - t0
    n = _metadata_partitions(b.port)
    t_md = time.perf_counter() - t0
    if n < expect_partitions:
        raise RuntimeError(f"metadata shows {n} partitions, expected {expect_partitions}")
    r = {"port_s": round(t_port, 3), "ready_s": round(t_md, 3), "partitions": n}
    if topic is not None:
        off = _latest_offset(b.port, topic)
        r["ready_s"] = round(time.perf_counter() - t0, 3)
        r["latest_offset"] = off
        if off != expect_offset:
            raise RuntimeError(f"after recovery latest offset {off}, expected {expect_offset}")
    return r


def _create_many(port: int, partitions: int) -> list[tuple[str, int]]:
    """Topics of MANY_PER_TOPIC partitions, created in requests of at most the broker's per-request cap."""
    topics = [(f"many-{i:03d}", min(MANY_PER_TOPIC, partitions - i * MANY_PER_TOPIC))
              for i in range(-(-partitions // MANY_PER_TOPIC))]
    per_request = max(1, MAX_PARTITIONS_PER_BATCH // MANY_PER_TOPIC)
    with WireClient(port, timeout_s=900) as c:
        for i in range(0, len(topics), per_request):
            r = c.call(19, 7, {"topics": [{"name": n, "num_partitions": k, "replication_factor": 1, "assignments": [],
                                           "configs": []} for n, k in topics[i:i + per_request]],
                               "timeout": 60_000, "validate_only": False})
            failed = [(t.name, t.error_code, t.error_message) for t in r.topics if t.error_code]
            if failed:
                raise RuntimeError(f"CreateTopics failed: {failed[:3]}")
    return topics


def _write_every(port: int, topics: list[tuple[str, int]], every: int = WRITE_EVERY) -> int:
    """One 100-byte record to every `every`-th partition, one Produce request per topic; partitions written."""
    batch = build_batch([Record(timestamp=int(time.time() * 1000), key=None, value=b"x" * 100)])
    written = 0
    with WireClient(port, timeout_s=120) as c:
        for name, count in topics:
            parts = range(0, count, every)
            r = c.call(0, 9, {"transactional_id": None, "acks": 1, "timeout": 30_000, "topic_data": [
                {"name": name, "partition_data": [{"index": p, "records": batch} for p in parts]}]})
            failed = [p.error_code for p in r.responses[0].partition_responses if p.error_code]
            if failed:
                raise RuntimeError(f"Produce to {name} failed: {failed[:3]}")
            written += len(parts)
    return written


def _open_fds(b: BrokerProcess) -> int:
    return len(os.listdir(f"/proc/{b.proc.pid}/fd"))


def _rss_mb(b: BrokerProcess) -> float:
    for line in Path(f"/proc/{b.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def many_partitions_run(root: Path, partitions: int) -> dict:
    """Create, write, clean restart, write, kill -9, restart: times, descriptors and memory after each start."""
    b = BrokerProcess(root / f"many-{partitions}", **OUR_BROKER_PROPS)
    b.start()
    try:
        t0 = time.perf_counter()
        topics = _create_many(b.port, partitions)
        r: dict = {"partitions": partitions, "create_s": round(time.perf_counter() - t0, 2)}
        r["written_partitions"] = _write_every(b.port, topics)
        r["fds_after_writes"] = _open_fds(b)
        b.stop()
        clean = timed_start(b, partitions)
        clean.update(fds=_open_fds(b), rss_mb=_rss_mb(b))
        _write_every(b.port, topics)
        b.kill()
        crash = timed_start(b, partitions, topic=topics[-1][0], expect_offset=2)
        crash.update(fds=_open_fds(b), rss_mb=_rss_mb(b))
        t0 = time.perf_counter()  # then a record to every partition: more .log files than may stay open
        _write_every(b.port, topics, every=1)
        r["write_all"] = {"s": round(time.perf_counter() - t0, 2), "fds": _open_fds(b), "rss_mb": _rss_mb(b)}
        limits = [ln for ln in Path(f"/proc/{b.proc.pid}/limits").read_text().splitlines() if "open files" in ln]
        r["open_file_limit"] = " ".join(limits[0].split()[3:5]) if limits else None
        r.update(clean_start=clean, restart_after_kill9=crash)
        return r
    finally:
        b.stop()


def many_main(args: argparse.Namespace) -> dict:
    print(f"# many partitions: {args.many_baseline:,} (baseline) then {args.many:,}, each written every "
          f"{WRITE_EVERY}th partition, clean restart, kill -9, restart", flush=True)
    root = Path(tempfile.mkdtemp(prefix="kscope-many-"))
    result: dict = {"mode": "many_partitions"}
    try:
        for key, n in (("baseline", args.many_baseline), ("many", args.many)):
            r = result[key] = many_partitions_run(root, n)
            shutil.rmtree(root / f"many-{n}", ignore_errors=True)
            c, k = r["clean_start"], r["restart_after_kill9"]
            print(f"  {n:,} partitions: created in {r['create_s']:.1f} s; {r['written_partitions']:,} written "
                  f"({r['fds_after_writes']:,} fds); clean start ready {c['ready_s']:.2f} s ({c['fds']} fds, "
                  f"{c['rss_mb']:.0f} MB); restart after kill -9 ready {k['ready_s']:.2f} s ({k['fds']} fds, "
                  f"{k['rss_mb']:.0f} MB); then a record to every partition in {r['write_all']['s']:.1f} s "
                  f"({r['write_all']['fds']:,} fds); open-file limit (soft hard) {r['open_file_limit']}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base, many = result["baseline"], result["many"]
    result["ratios"] = {
        f"{what}_{field}": ratio(many[what][field], base[what][field])
        for what in ("clean_start", "restart_after_kill9") for field in ("ready_s", "fds")}
    print("  ratios vs baseline: " + ", ".join(f"{k} {fmt(v)}" for k, v in result["ratios"].items()), flush=True)
    emit_json("startup_recovery", result)
    return result


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="benchmarks.startup_recovery", description=__doc__.splitlines()[0])
    p.add_argument("--partitions", type=int, default=1000, help="partitions for the clean start (default 1000)")
    p.add_argument("--gb", type=float, default=1.0, help="GB written before kill -9 (default 1)")
    p.add_argument("--write-seconds", type=float, default=60.0, help="time bound for the write (default 60)")
    p.add_argument("--quick", action="store_true", help="200 partitions, 0.2 GB")
    p.add_argument("--many", type=int, default=0, metavar="N",
                   help="many-partitions mode instead: N partitions (e.g. 20000), kill -9 and restart")
    p.add_argument("--many-baseline", type=int, default=1000, metavar="N",
                   help="partitions of the many-partitions mode's same-run baseline (default 1000)")
    return p


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    if args.many:
        return many_main(args)
    if args.quick:
        args.partitions, args.gb = min(args.partitions, 200), min(args.gb, 0.2)
    print(f"# startup/recovery: {args.partitions} partitions clean start; {args.gb:g} GB then kill -9")
    result: dict = {}
    root = Path(tempfile.mkdtemp(prefix="kscope-startup-"))
    try:
        # baseline: empty broker, started twice (the first start also creates the offsets topic)
        b = BrokerProcess(root / "empty", **OUR_BROKER_PROPS)
        b.start()
        b.stop()
        result["baseline"] = timed_start(b, 0)
        b.stop()
        base = result["baseline"]["ready_s"]
        print(f"  baseline (0 user partitions): ready {base:.3f} s (port {result['baseline']['port_s']:.3f} s)",
              flush=True)

        # (a) many partitions, clean restart
        b = BrokerProcess(root / "many", **OUR_BROKER_PROPS)
        b.start()
        t0 = time.perf_counter()
        left, i = args.partitions, 0
        while left > 0:
            n = min(PER_TOPIC, left)
            create_topic(b.bootstrap, f"many-{i:03d}", n, timeout_s=120)
            left -= n
            i += 1
        create_s = time.perf_counter() - t0
        b.stop()
        a = timed_start(b, args.partitions)
        b.stop()
        a["create_s"] = round(create_s, 3)
        a["ratio_vs_baseline"] = ratio(a["ready_s"], base)
        a["pass"] = a["ready_s"] < TARGET_S
        result["many_partitions"] = a
        print(f"  (a) {args.partitions} partitions clean start: ready {a['ready_s']:.3f} s "
              f"(port {a['port_s']:.3f} s; creating them took {create_s:.1f} s) -> {fmt(a['ratio_vs_baseline'])}x "
              f"baseline; target < {TARGET_S:g} s -> {verdict(a['pass'])}", flush=True)

        # (b) big log, kill -9, recover
        b = BrokerProcess(root / "crash", **OUR_BROKER_PROPS)
        b.start()
        topic = "crash"
        create_topic(b.bootstrap, topic, 1)
        w = produce(b.bootstrap, topic, 1, records=int(args.gb * 1e9 / 1024), seconds=args.write_seconds)
        b.kill()
        on_disk = sum(f.stat().st_size for f in (root / "crash" / "logs").rglob("*") if f.is_file())
        rec = timed_start(b, 1, topic=topic, expect_offset=w["records"] + 1)  # +1: produce() warm-up record
        b.stop()
        rec.update(written_records=w["records"], written_mb=round(w["bytes"] / MB, 1),
                   write_mb_per_s=w["mb_per_s"], on_disk_mb=round(on_disk / MB, 1),
                   ratio_vs_baseline=ratio(rec["ready_s"], base), pass_=None)
        rec.pop("pass_")
        rec["pass"] = rec["ready_s"] < TARGET_S
        result["crash_recovery"] = rec
        print(f"  (b) kill -9 after {rec['written_mb']:,} MB ({on_disk / MB:,.0f} MB on disk): ready "
              f"{rec['ready_s']:.3f} s (port {rec['port_s']:.3f} s) -> {fmt(rec['ratio_vs_baseline'])}x baseline; "
              f"target < {TARGET_S:g} s -> {verdict(rec['pass'])}", flush=True)
        tail = [ln for ln in b.log_tail(400).splitlines() if "recover" in ln.lower() or "started on" in ln]
        for ln in tail[-3:]:
            print(f"      log: {ln[:200]}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result["pass"] = result.get("many_partitions", {}).get("pass") and result.get("crash_recovery", {}).get("pass")
    emit_json("startup_recovery", result)
    return result


if __name__ == "__main__":
    main()
