"""Transactional vs idempotent produce on our standalone broker (issue 19's benchmark, our side).

    python -m benchmarks.txn_overhead [--records 20000] [--value-size 1024] [--sizes 10,100,1000]
                                      [--rate 0] [--with-apache]

The same confluent-kafka producer settings (acks=all, linger.ms=5, 3 partitions) send `--records` values of
`--value-size` bytes: once idempotent, then transactional with each of `--sizes` records per transaction
(begin, produce the records round-robin over the partitions, commit; the clock runs until the last commit).
With `--rate` (records/s, e.g. 1 for 1 KB/s) the records are paced and the commit latency is what matters;
the default 0 is full speed. Prints records/s, MB/s and the mean/p99 commit_transaction() time per row and
the overhead against idempotent; the last line is one JSON object. `--with-apache` repeats it on Apache Kafka.
"""

from __future__ import annotations

import argparse
import time
import uuid

from benchmarks._common import MB, apache_kafka, create_topic, emit_json, fmt, our_broker, print_table, ratio

PARTITIONS = 3
TXN_PROPS = {"transaction.state.log.replication.factor": 1, "transaction.state.log.min.isr": 1,
             "transaction.state.log.num.partitions": 5}


def _producer(bootstrap: str, txn_id: str | None):
    from confluent_kafka import Producer

    cfg = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "enable.idempotence": True,
           "batch.size": 1048576, "queue.buffering.max.kbytes": 1048576}
    if txn_id:
        cfg["transactional.id"] = txn_id
    return Producer(cfg)


def _pace(i: int, t0: float, rate: float) -> None:
    if rate > 0:
        delay = t0 + i / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)  # pacing the workload itself, not waiting for a condition


def run_one(bootstrap: str, records: int, value_size: int, per_txn: int | None, rate: float) -> dict:
    """One row: per_txn None = idempotent only."""
    topic = f"txb-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    p = _producer(bootstrap, f"bench-{uuid.uuid4().hex[:8]}" if per_txn else None)
    value = b"x" * value_size
    commits: list[float] = []
    # Warm-up, not timed: metadata, connections to the leaders (and the coordinator, in one transaction).
    if per_txn:
        p.init_transactions(30)
        p.begin_transaction()
    for i in range(PARTITIONS):
        p.produce(topic, value, partition=i)
    if per_txn:
        p.commit_transaction(60)
    if p.flush(30):
        raise RuntimeError("warm-up records left undelivered")
    t0 = time.perf_counter()
    sent = 0
    while sent < records:
        n = min(per_txn or records, records - sent)
        if per_txn:
            p.begin_transaction()
        for i in range(n):
            _pace(sent + i, t0, rate)
            while True:
                try:
                    p.produce(topic, value, partition=(sent + i) % PARTITIONS)
                    break
                except BufferError:
                    p.poll(0.01)
            p.poll(0)
        sent += n
        if per_txn:
            c0 = time.perf_counter()
            p.commit_transaction(60)
            commits.append(time.perf_counter() - c0)
    if p.flush(120):
        raise RuntimeError("records left undelivered")
    elapsed = time.perf_counter() - t0
    commits.sort()
    return {"per_txn": per_txn or 0, "records_per_s": round(records / elapsed), "seconds": round(elapsed, 3),
            "mb_per_s": round(records * value_size / elapsed / MB, 2),
            "commit_ms_mean": round(sum(commits) / len(commits) * 1000, 2) if commits else None,
            "commit_ms_p99": round(commits[int(len(commits) * 0.99) - 1 if len(commits) > 1 else 0] * 1000, 2)
            if commits else None}


def run_all(bootstrap: str, args: argparse.Namespace) -> list[dict]:
    rows = [run_one(bootstrap, args.records, args.value_size, None, args.rate)]
    for size in args.sizes:
        rows.append(run_one(bootstrap, args.records, args.value_size, size, args.rate))
    base = rows[0]["records_per_s"]
    for r in rows:
        r["throughput_vs_idempotent"] = ratio(r["records_per_s"], base)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--value-size", type=int, default=1024)
    ap.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[10, 100, 1000])
    ap.add_argument("--rate", type=float, default=0.0)
    ap.add_argument("--with-apache", action="store_true")
    args = ap.parse_args()
    result = {}
    with our_broker(**TXN_PROPS) as b:
        result["ours"] = run_all(b.bootstrap, args)
    if args.with_apache:
        with apache_kafka() as k:
            result["apache"] = run_all(k.bootstrap, args)
    for name, rows in result.items():
        print(f"\n{name}: {args.records} records of {args.value_size} B, acks=all, rate "
              f"{'full speed' if not args.rate else f'{args.rate}/s'}")
        print_table([("records/txn", "records/s", "MB/s", "vs idempotent", "commit ms mean", "commit ms p99"),
                     *((("idempotent" if not r["per_txn"] else str(r["per_txn"])), fmt(r["records_per_s"]),
                        fmt(r["mb_per_s"]), fmt(r["throughput_vs_idempotent"]), fmt(r["commit_ms_mean"]),
                        fmt(r["commit_ms_p99"])) for r in rows)])
    emit_json("txn_overhead", {"records": args.records, "value_size": args.value_size, "rate": args.rate,
                               **result})


if __name__ == "__main__":
    main()
