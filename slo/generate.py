"""Synthetic SLI intervals (xmonitor's SLI_SCHEMA) with scripted incidents whose true SLIs are known in closed form.

Every (cluster, topic, partition) gets one row per interval with `records` produce attempts; leaders are
`partition % brokers`. Baseline: everything succeeds, is consumed on time, e2e latencies 2..40 ms.
Incidents, `KIND@START+DURATION[:key=value,...]` (START is an offset from --start, e.g. `2d3h`, `90m`):

  broker-down   rows led by `broker` (default 0): every produce fails (NOT_LEADER_OR_FOLLOWER), nothing consumed
  latency-spike every record consumed late, e2e latency 1.5..3 s (over any threshold below 1.5 s)
  loss          `lost` records (default 1) of each row are never consumed
  no-traffic    rows are written with zero attempts (xmonitor up, producing nothing)
  gap           no rows at all (xmonitor down: missing intervals)

Selectors: `cluster=c0`, `topic=...`, `partition=N` (broker-down: `broker=N`); default all. An interval is
affected when its start lies in [START, START+DURATION). `expected()` gives the closed-form totals; the
generator itself is vectorised (numpy + pyarrow; the HDR payloads are precomputed per (profile, count)).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from slo import live
from xmonitor.sli_schema import SLI_SCHEMA, encode_hdr, new_histogram

KINDS = ("broker-down", "latency-spike", "loss", "no-traffic", "gap")
DEFAULT_START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
NORMAL_US, SLOW_US = (2_000, 40_000), (1_500_000, 3_000_000)
DAY_S = 86400


def parse_offset(text: str) -> int:
    """'2d3h30m' / '90m' / '45s' / '0' -> seconds."""
    text = text.strip()
    if text == "0":
        return 0
    parts = re.findall(r"(\d+)([dhms])", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not an offset: {text!r} (use e.g. 2d3h, 90m, 45s)")
    return sum(int(n) * {"d": DAY_S, "h": 3600, "m": 60, "s": 1}[u] for n, u in parts)


@dataclasses.dataclass(frozen=True)
class Incident:
    kind: str
    start_s: int       # offset from the dataset start
    duration_s: int
    cluster: str | None = None
    topic: str | None = None
    partition: int | None = None
    broker: int | None = None
    lost: int = 1

    @classmethod
    def parse(cls, text: str) -> Incident:
        m = re.fullmatch(r"([a-z-]+)@([0-9dhms]+)\+([0-9dhms]+)(?::(.*))?", text.strip())
        if not m:
            raise ValueError(f"incident {text!r}: expected KIND@START+DURATION[:key=value,...]")
        kind, start, duration, opts = m.groups()
        if kind not in KINDS:
            raise ValueError(f"incident {text!r}: unknown kind {kind!r} (one of {', '.join(KINDS)})")
        fields: dict = {}
        for item in filter(None, (opts or "").split(",")):
            key, _, value = item.partition("=")
            if key in ("cluster", "topic"):
                fields[key] = value
            elif key in ("partition", "broker", "lost"):
                fields[key] = int(value)
            else:
                raise ValueError(f"incident {text!r}: unknown option {key!r}")
        if kind == "broker-down":
            fields.setdefault("broker", 0)
        return cls(kind, parse_offset(start), parse_offset(duration), **fields)


@dataclasses.dataclass(frozen=True)
class GenConfig:
    days: float = 14
    clusters: int = 1
    topics: int = 1
    partitions: int = 3
    brokers: int = 3
    interval_s: int = 10
    records: int = 10          # produce attempts per row (= HDR samples per row)
    start: dt.datetime = DEFAULT_START
    incidents: tuple[Incident, ...] = ()
    run_id: str = "synthetic"

    @property
    def n_intervals(self) -> int:
        return int(round(self.days * DAY_S / self.interval_s))

    @property
    def start_ms(self) -> int:
        return int(self.start.timestamp() * 1000)

    @property
    def end_ms(self) -> int:
        return self.start_ms + self.n_intervals * self.interval_s * 1000

    def cluster_names(self) -> list[str]:
        return [f"c{i}" for i in range(self.clusters)]

    def topic_names(self) -> list[str]:
        return ["xmonitor"] if self.topics == 1 else [f"xmonitor-{j}" for j in range(self.topics)]


def _payload(profile: str, n: int) -> bytes:
    h = new_histogram()
    lo, hi = NORMAL_US if profile == "normal" else SLOW_US
    for i in range(n):
        h.record_value(lo + (hi - lo) * i // max(n - 1, 1))
    return encode_hdr(h)


def profile_samples(profile: str, n: int) -> list[int]:
    """The exact samples behind a precomputed payload (tests compare merged percentiles with these)."""
    lo, hi = NORMAL_US if profile == "normal" else SLOW_US
    return [lo + (hi - lo) * i // max(n - 1, 1) for i in range(n)]


def _matches(inc: Incident, cfg: GenConfig, cluster: str) -> bool:
    return inc.cluster is None or inc.cluster == cluster


def _chunk(cfg: GenConfig, cluster: str, k0: int, k1: int, payloads: pa.Array) -> pa.Table | None:
    """Rows for intervals [k0, k1) of one cluster, vectorised."""
    topics, P, R = cfg.topic_names(), cfg.partitions, cfg.records
    tp = len(topics) * P
    k = np.repeat(np.arange(k0, k1, dtype=np.int64), tp)
    t_idx = np.tile(np.repeat(np.arange(len(topics), dtype=np.int32), P), k1 - k0)
    part = np.tile(np.arange(P, dtype=np.int32), len(topics) * (k1 - k0))
    leader = part % cfg.brokers
    start_s = k * cfg.interval_s
    n = len(k)
    attempts = np.full(n, R, dtype=np.int64)
    failed = np.zeros(n, dtype=np.int64)
    lost = np.zeros(n, dtype=np.int64)
    slow = np.zeros(n, dtype=bool)
    keep = np.ones(n, dtype=bool)
    for inc in cfg.incidents:
        if not _matches(inc, cfg, cluster):
            continue
        m = (start_s >= inc.start_s) & (start_s < inc.start_s + inc.duration_s)
        if inc.topic is not None:
            m &= t_idx == (topics.index(inc.topic) if inc.topic in topics else -1)
        if inc.partition is not None:
            m &= part == inc.partition
        if inc.kind == "broker-down":
            m &= leader == inc.broker
            failed[m] = attempts[m]
        elif inc.kind == "latency-spike":
            slow |= m
        elif inc.kind == "loss":
            lost[m] = np.minimum(attempts[m] - failed[m], inc.lost)
        elif inc.kind == "no-traffic":
            attempts[m] = 0
        elif inc.kind == "gap":
            keep &= ~m
    failed = np.minimum(failed, attempts)
    successes = attempts - failed
    lost = np.minimum(lost, successes)
    consumed = successes - lost
    late = np.where(slow, consumed, 0)
    if not keep.all():
        sel = np.nonzero(keep)[0]
        k, t_idx, part, leader, attempts, failed, successes, lost, consumed, late, slow = (
            a[sel] for a in (k, t_idx, part, leader, attempts, failed, successes, lost, consumed, late, slow))
        n = len(k)
    if n == 0:
        return None
    ts = cfg.start_ms + k * cfg.interval_s * 1000
    has_err = failed > 0
    offsets = np.concatenate([[0], np.cumsum(has_err)]).astype(np.int32)
    n_err = int(has_err.sum())
    errors = pa.MapArray.from_arrays(pa.array(offsets), pa.array(["NOT_LEADER_OR_FOLLOWER"] * n_err, pa.string()),
                                     pa.array(failed[has_err], pa.int64()))
    # payload index: normal profiles at [0..R], slow at [R+1..2R+1]
    e2e_idx = consumed + np.where(slow, R + 1, 0)
    columns = [
        pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([cluster])).cast(pa.string()),
        pa.array(np.asarray(topics, dtype=object)[t_idx], pa.string()),
        pa.array(part, pa.int32()), pa.array(leader.astype(np.int32), pa.int32()),
        pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([cfg.run_id])).cast(pa.string()),
        pa.array(ts, pa.timestamp("ms", tz="UTC")),
        pa.array(ts + cfg.interval_s * 1000, pa.timestamp("ms", tz="UTC")),
        pa.array(attempts), pa.array(successes), errors, pa.array(consumed), pa.array(lost),
        pa.array(np.zeros(n, dtype=np.int64)), pa.array(np.zeros(n, dtype=np.int64)), pa.array(late),
        payloads.take(pa.array(successes)), payloads.take(pa.array(e2e_idx)),
    ]
    return pa.Table.from_arrays(columns, schema=SLI_SCHEMA)


def _write(table: pa.Table, out: Path, day: str, cluster: str, start_ms: int) -> Path:
    directory = out / f"date={day}"
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"{cluster}-{start_ms}-{uuid.uuid4().hex[:8]}.parquet"
    tmp = directory / f".{final.name}.tmp"
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, final)
    return final


def generate(cfg: GenConfig, out: str | Path, per_interval: bool = False) -> dict:
    """Write the dataset (one file per cluster and UTC day, or, `per_interval`, one per cluster and interval as
    xmonitor writes them) and mark the directory synthetic (slo.live.SYNTHETIC_MARKER); returns row and file
    counts."""
    out = Path(out)
    live.write_marker(out, {"generator": "slo.generate", "start": live.iso(cfg.start_ms),
                            "end": live.iso(cfg.end_ms), "clusters": cfg.clusters, "partitions": cfg.partitions,
                            "interval_s": cfg.interval_s, "incidents": [dataclasses.asdict(i) for i in cfg.incidents]})
    R = cfg.records
    payloads = pa.array([_payload("normal", i) for i in range(R + 1)] + [_payload("slow", i) for i in range(R + 1)],
                        pa.binary())
    per_day = DAY_S // cfg.interval_s
    rows = files = 0
    # chunk boundaries on UTC day edges
    offset_s = int(cfg.start.timestamp()) % DAY_S
    bounds = [0]
    first = (DAY_S - offset_s) // cfg.interval_s if offset_s else per_day
    while bounds[-1] < cfg.n_intervals:
        bounds.append(min(cfg.n_intervals, first if len(bounds) == 1 else bounds[-1] + per_day))
    for cluster in cfg.cluster_names():
        for k0, k1 in zip(bounds, bounds[1:], strict=False):
            table = _chunk(cfg, cluster, k0, k1, payloads)
            if table is None:
                continue
            t0 = cfg.start_ms + k0 * cfg.interval_s * 1000
            day = dt.datetime.fromtimestamp(t0 / 1000, dt.UTC).strftime("%Y-%m-%d")
            rows += table.num_rows
            if not per_interval:
                _write(table, out, day, cluster, t0)
                files += 1
                continue
            starts = table.column("interval_start").cast(pa.int64()).to_numpy()
            cuts = [0, *np.nonzero(np.diff(starts))[0] + 1, len(starts)]   # rows are in interval order
            for a, b in zip(cuts, cuts[1:], strict=False):
                _write(table.slice(a, b - a), out, day, cluster, int(starts[a]))
                files += 1
    return {"rows": rows, "files": files, "start_ms": cfg.start_ms, "end_ms": cfg.end_ms}


# ---------------------------------------------------------------- closed form

def _intervals_in(cfg: GenConfig, lo_s: float, hi_s: float) -> int:
    """How many interval starts k*interval (0 <= k < n_intervals) lie in [lo_s, hi_s)."""
    i = cfg.interval_s
    a = max(0, -(-int(np.ceil(lo_s)) // i))
    b = min(cfg.n_intervals, -(-int(np.ceil(hi_s)) // i))
    return max(0, b - a)


def _rows_per_interval(cfg: GenConfig, inc: Incident) -> int:
    clusters = cfg.clusters if inc.cluster is None else int(inc.cluster in cfg.cluster_names())
    topics = len(cfg.topic_names()) if inc.topic is None else int(inc.topic in cfg.topic_names())
    if inc.kind == "broker-down":
        parts = [p for p in range(cfg.partitions) if p % cfg.brokers == inc.broker]
        if inc.partition is not None:
            parts = [p for p in parts if p == inc.partition]
        partitions = len(parts)
    else:
        partitions = cfg.partitions if inc.partition is None else int(0 <= inc.partition < cfg.partitions)
    return clusters * topics * partitions


def expected(cfg: GenConfig, lo_s: float = 0, hi_s: float | None = None) -> dict[str, int]:
    """Closed-form totals over interval starts in [lo_s, hi_s) (seconds from the start), for non-overlapping
    incidents: produce attempts/successes, records expected/on time/not lost, latency samples/under threshold,
    rows present, rows missing."""
    hi_s = cfg.n_intervals * cfg.interval_s if hi_s is None else hi_s
    R = cfg.records
    base_rows = _intervals_in(cfg, lo_s, hi_s) * cfg.clusters * len(cfg.topic_names()) * cfg.partitions
    e = dict(rows=base_rows, missing_rows=0, produce_attempts=base_rows * R, produce_successes=base_rows * R,
             records_expected=base_rows * R, records_on_time=base_rows * R, records_not_lost=base_rows * R,
             latency_samples=base_rows * R, latency_good=base_rows * R, produce_samples=base_rows * R)
    for inc in cfg.incidents:
        n = _intervals_in(cfg, max(lo_s, inc.start_s), min(hi_s, inc.start_s + inc.duration_s)) \
            * _rows_per_interval(cfg, inc)
        lost = min(inc.lost, R)
        if inc.kind == "broker-down":
            for key in ("produce_successes", "records_expected", "records_on_time", "records_not_lost",
                        "latency_samples", "latency_good", "produce_samples"):
                e[key] -= n * R
        elif inc.kind == "latency-spike":
            e["records_on_time"] -= n * R
            e["latency_good"] -= n * R
        elif inc.kind == "loss":
            e["records_on_time"] -= n * lost
            e["records_not_lost"] -= n * lost
            e["latency_samples"] -= n * lost
            e["latency_good"] -= n * lost
        elif inc.kind in ("no-traffic", "gap"):
            for key in ("produce_attempts", "produce_successes", "records_expected", "records_on_time",
                        "records_not_lost", "latency_samples", "latency_good", "produce_samples"):
                e[key] -= n * R
            if inc.kind == "gap":
                e["rows"] -= n
                e["missing_rows"] += n
    return e
