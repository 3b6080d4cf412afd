"""HDR histograms in the report: per-payload statistics, sparse merges and latency percentiles (no Spark here;
the passes call these on the executors)."""

from __future__ import annotations

import numpy as np

from slo import hdr
from slo.specs import SLOSpec

HISTS = ("e2e_latency_hdr", "produce_latency_hdr")


def latency_thresholds(event_specs: list[SLOSpec]) -> dict[str, list[tuple[int, int]]]:
    """histogram -> (spec index, threshold in µs) of every latency SLO on it."""
    thresholds: dict[str, list[tuple[int, int]]] = {h: [] for h in HISTS}
    for i, s in enumerate(event_specs):
        if s.kind == "latency":
            thresholds[s.histogram].append((i, s.threshold_us))
    return thresholds


def sparse(counts: np.ndarray) -> tuple[list[int], list[int]]:
    """(indexes, counts) of the non-empty buckets: what an executor sends back per merged group."""
    nz = np.nonzero(counts)[0]
    return nz.tolist(), counts[nz].tolist()


def merge_group(items) -> tuple[list[int], list[int]]:
    """Merge (payload, multiplicity) pairs into one sparse histogram."""
    return sparse(hdr.merge(items))


def payload_stats(payload: bytes, thresholds: tuple[int, ...]) -> tuple[int, ...]:
    """(samples, samples <= each threshold) of one HDR payload."""
    counts = hdr.counts_of(payload)
    return (int(counts.sum()), *(hdr.count_le(counts, t) for t in thresholds))


def dense(sparse_parts) -> np.ndarray:
    """Sum sparse histograms into one dense one."""
    acc = hdr.empty()
    for idx, vals in sparse_parts:
        if idx:
            acc[np.asarray(idx)] += np.asarray(vals, dtype=np.int64)
    return acc


def latency_tables(merged: dict[str, dict], days: list[str]) -> tuple[dict, list[dict]]:
    """Percentiles over the window, per day and per (cluster, topic) from the per-(day, cluster, topic) merges:
    the report's latency section and the `latency` table rows."""
    latency: dict = {"window": {}, "daily": [], "per_topic": []}
    rows: list[dict] = []
    for h in HISTS:
        parts_by = merged[h]
        latency["window"][h] = hdr.summary(dense(parts_by.values()))
        rows.append({"histogram": h, "scope": "window", "date": None, "cluster": None, "topic": None,
                     **latency["window"][h]})
        for d in days:
            row = {"histogram": h, "date": d, **hdr.summary(dense(v for k, v in parts_by.items() if k[0] == d))}
            latency["daily"].append(row)
            rows.append({"scope": "day", "cluster": None, "topic": None, **row})
        for ct in sorted({(k[1], k[2]) for k in parts_by}):
            row = {"histogram": h, "cluster": ct[0], "topic": ct[1],
                   **hdr.summary(dense(v for k, v in parts_by.items() if (k[1], k[2]) == ct))}
            latency["per_topic"].append(row)
            rows.append({"scope": "topic", "date": None, **row})
    return latency, rows
