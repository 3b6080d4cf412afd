"""xmonitor's transactional mode against the plain probe, same run, same broker (docs/xmonitor.md §5).

    python -m benchmarks.xmonitor_txn [--partitions 6] [--delay-ms 100] [--seconds 20]

Starts our broker (transaction state log for one broker), then runs xmonitor in-process twice on fresh topics of
--partitions partitions, one record per partition every --delay-ms: plain (idempotent acks=all sends, spread over
the interval) and `produce.transactional.enabled` (one transaction per round, read back read_committed). After a
5 s warm-up it measures for --seconds: the probe's end-to-end delay (send → consumed; in transactional mode this
includes the commit), this process's CPU and the broker's, and in transactional mode the commit latency and the
visibility delay (commit_transaction() called → record consumed), p50/p99 over every round / record.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks._common import emit_json, fmt, our_broker, print_table
from xmonitor.app import XMonitor
from xmonitor.config import MonitorConfig
from xmonitor.txn import TxnMetrics

WARM_UP_S = 5.0
TXN_PROPS = {"transaction.state.log.replication.factor": 1, "transaction.state.log.min.isr": 1}
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


class _Recorded:
    """The raw commit latencies and visibility delays of a TxnMetrics (benchmark-only instrumentation)."""

    def __init__(self, metrics: TxnMetrics) -> None:
        self.commit: list[float] = []
        self.visible: list[float] = []
        committed, visible = metrics.committed, metrics.visible

        def on_commit(latency_s: float) -> None:
            self.commit.append(latency_s)
            committed(latency_s)

        def on_visible(delay_s: float) -> None:
            self.visible.append(delay_s)
            visible(delay_s)
        metrics.committed, metrics.visible = on_commit, on_visible   # type: ignore[method-assign]

    def reset(self) -> None:
        self.commit.clear()
        self.visible.clear()


def run_mode(bootstrap: str, broker_pid: int, transactional: bool, args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cfg = MonitorConfig(bootstrap_servers=bootstrap, topic=f"xm-txn-bench-{int(transactional)}-{time.time_ns()}",
                            cluster_name="bench", produce_record_delay_ms=args.delay_ms, sli_dir=tmp,
                            partitions_to_brokers_ratio=float(args.partitions), min_partition_num=args.partitions,
                            produce_transactional_enabled=transactional).validate()
        e2e: list[float] = []
        with XMonitor(cfg) as m:
            consume = m.consume
            handle = consume.handle

            def timed(msg, now_us: int) -> None:   # every record's end-to-end delay, as the probe measures it
                handle(msg, now_us)
                if msg.error() is None:
                    e2e.append(now_us / 1e6 - _send_time_s(msg.value()))
            consume.handle = timed   # type: ignore[method-assign]
            recorded = _Recorded(m.produce.txn) if transactional else None
            time.sleep(WARM_UP_S)
            e2e.clear()
            if recorded:
                recorded.reset()
            cpu0, bcpu0, t0 = time.process_time(), _cpu_s(broker_pid), time.monotonic()
            time.sleep(args.seconds)
            elapsed = time.monotonic() - t0
            cpu, bcpu = time.process_time() - cpu0, _cpu_s(broker_pid) - bcpu0
            lost = m.rec.kmf_gauges()[("consume-service", "records-lost-total")]
        out = {"mode": "transactional" if transactional else "plain", "records": len(e2e),
               "e2e_p50_ms": _ms(_pct(e2e, 0.5)), "e2e_p99_ms": _ms(_pct(e2e, 0.99)),
               "xmonitor_cpu_pct": 100 * cpu / elapsed, "broker_cpu_pct": 100 * bcpu / elapsed, "lost": lost}
        if recorded:
            out |= {"rounds": len(recorded.commit),
                    "commit_p50_ms": _ms(_pct(recorded.commit, 0.5)), "commit_p99_ms": _ms(_pct(recorded.commit, 0.99)),
                    "commit_mean_ms": _ms(statistics.fmean(recorded.commit) if recorded.commit else None),
                    "visibility_p50_ms": _ms(_pct(recorded.visible, 0.5)),
                    "visibility_p99_ms": _ms(_pct(recorded.visible, 0.99))}
        return out


def _send_time_s(value: bytes | None) -> float:
    from xmonitor import payload
    return payload.decode(value, 0).time_us / 1e6


def _ms(s: float | None) -> float | None:
    return None if s is None else round(s * 1000, 2)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--delay-ms", type=int, default=100)
    p.add_argument("--seconds", type=float, default=20.0)
    args = p.parse_args()
    with our_broker(**TXN_PROPS) as b:
        assert b.proc is not None
        runs = [run_mode(b.bootstrap, b.proc.pid, txn, args) for txn in (False, True)]
    keys = ("records", "e2e_p50_ms", "e2e_p99_ms", "xmonitor_cpu_pct", "broker_cpu_pct", "lost", "rounds",
            "commit_p50_ms", "commit_p99_ms", "visibility_p50_ms", "visibility_p99_ms")
    print_table([("", *(r["mode"] for r in runs)), *((k, *(fmt(r.get(k)) for r in runs)) for k in keys)])
    emit_json("xmonitor_txn", {"partitions": args.partitions, "delay_ms": args.delay_ms, "seconds": args.seconds,
                               "runs": runs})


if __name__ == "__main__":
    main()
