"""Scheduled SLO reports on live data: the schedule, atomic publishing, retention and the page's freshness verdict.

Layout of a reports root (what `kafkascope slo report --every` writes and `kafkascope page --report ROOT` reads):

  ROOT/report-<UTC yyyymmddThhmmssZ>/   one complete report each (report.json, report.html, Parquet tables)
  ROOT/latest                          one line: the newest report's directory name (replaced atomically)
  ROOT/schedule.json                   {"every_seconds", "next_run", "last_report", "keep"} (replaced atomically)
  ROOT/.tmp-*                          a report being written (renamed into place when complete)
  ROOT/.sli-cache/date=D/              one Parquet file per closed day of the SLI dir (compact)

A report is built in a temporary directory beside its final place and renamed, so a reader either sees the whole
report or none of it; `latest` is written the same way after the rename. Everything here is plain file work with
the time passed in: no Spark, no clock reads, so it is unit-tested without servers.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import uuid
from pathlib import Path

LATEST, SCHEDULE, PREFIX, TMP_PREFIX = "latest", "schedule.json", "report-", ".tmp-"
SLI_CACHE = ".sli-cache"            # under a reports root: compacted closed days (compact)
SYNTHETIC_MARKER = "_SYNTHETIC.json"   # underscore: Spark and pyarrow datasets skip it when reading the SLI files
STALE_FACTOR = 2
# xmonitor writes an interval's rows when it ends (sli.interval.ms, 10 s by default): a window ending at "now"
# would always miss the intervals still open and never look complete, so a live window ends at the last whole
# minute at least LIVE_GRACE_MS ago.
LIVE_GRACE_MS = 30_000
STEP_MS = 60_000
COMPACT_GRACE_MS = 10 * 60_000   # a day's last intervals are written just after midnight (and late by a stall)


def iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> int:
    return int(dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def report_name(now_ms: int) -> str:
    """Sorts by time; the seconds resolution is enough for schedules of a minute or more (see publish)."""
    return PREFIX + dt.datetime.fromtimestamp(now_ms / 1000, dt.UTC).strftime("%Y%m%dT%H%M%SZ")


def window_end_ms(now_ms: int, grace_ms: int = LIVE_GRACE_MS) -> int:
    """The end (exclusive) of a live report's window run at now_ms: whole minutes, the open intervals left out."""
    return (now_ms - grace_ms) // STEP_MS * STEP_MS


def next_run_ms(started_ms: int, finished_ms: int, every_ms: int) -> int:
    """Runs start on the grid started_ms + k*every; a run longer than the interval skips the missed slots
    rather than starting back to back."""
    if finished_ms < started_ms + every_ms:
        return started_ms + every_ms
    return started_ms + (1 + (finished_ms - started_ms) // every_ms) * every_ms


def _replace_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def temp_dir(root: str | Path) -> Path:
    """A fresh directory beside the published reports (same filesystem, so publish's rename is atomic)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"{TMP_PREFIX}{uuid.uuid4().hex[:12]}"
    path.mkdir()
    return path


def publish(root: str | Path, tmp: str | Path, now_ms: int) -> Path:
    """Rename the finished report `tmp` to its final name, then point `latest` at it."""
    root = Path(root)
    name = report_name(now_ms)
    final = root / name
    for n in range(1, 100):   # two runs within one second (tests, --every 1s): suffix, never overwrite
        if not final.exists():
            break
        final = root / f"{name}-{n}"
    os.rename(tmp, final)
    _replace_text(root / LATEST, final.name + "\n")
    return final


def latest(root: str | Path) -> Path | None:
    """The newest published report directory, or None (no `latest`, or it names nothing)."""
    root = Path(root)
    try:
        name = (root / LATEST).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    path = root / name
    return path if name and (path / "report.json").exists() else None


def resolve(path: str | Path) -> Path | None:
    """The report a page should show for `path`: a reports root (follow `latest`) or one report directory."""
    path = Path(path)
    if (path / LATEST).exists():
        return latest(path)
    return path if (path / "report.json").exists() else None


def prune(root: str | Path, keep: int) -> list[Path]:
    """Remove all but the `keep` newest reports (never the one `latest` names) and leftover temp directories
    of runs that died; returns what was removed."""
    root = Path(root)
    current = latest(root)
    reports = sorted((p for p in root.glob(f"{PREFIX}*") if p.is_dir()), key=lambda p: p.name, reverse=True)
    doomed = [p for p in reports[max(keep, 1):] if p != current]
    doomed += [p for p in root.glob(f"{TMP_PREFIX}*") if p.is_dir()]
    for p in doomed:
        shutil.rmtree(p, ignore_errors=True)
    return doomed


def write_schedule(root: str | Path, every_s: float, next_ms: int, last_report: str | None, keep: int) -> None:
    Path(root).mkdir(parents=True, exist_ok=True)
    _replace_text(Path(root) / SCHEDULE, json.dumps({"every_seconds": every_s, "next_run": iso(next_ms),
                                                     "last_report": last_report, "keep": keep}))


def read_schedule(root: str | Path) -> dict | None:
    try:
        return json.loads((Path(root) / SCHEDULE).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None


def write_marker(sli_dir: str | Path, info: dict) -> None:
    """Mark an SLI directory as synthetic (written by `slo generate`); the report carries it."""
    Path(sli_dir).mkdir(parents=True, exist_ok=True)
    _replace_text(Path(sli_dir) / SYNTHETIC_MARKER, json.dumps(info))


def read_marker(sli_dir: str | Path) -> dict | None:
    try:
        return json.loads((Path(sli_dir) / SYNTHETIC_MARKER).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None


def waiting_text(schedule: dict | None, now_ms: int) -> str:
    """What the page says while a reports root has no report yet."""
    base = "No report yet"
    if not schedule:
        return base + ": start with `kafkascope slo report --out DIR` (or --every) and `kafkascope page --report DIR`."
    due_ms = parse_iso(schedule["next_run"])
    when = (f"the first one is due in {_duration((due_ms - now_ms) / 1000)}" if due_ms > now_ms else
            f"the first one has been under way for {_duration((now_ms - due_ms) / 1000)} (Spark)")
    return f"{base}: reports every {_duration(float(schedule['every_seconds']))}; {when}."


def closed_days(sli_dir: str | Path, now_ms: int, grace_ms: int = COMPACT_GRACE_MS) -> list[str]:
    """UTC days of the SLI dir that no probe writes to any more (their end + grace is past)."""
    out = []
    for d in sorted(Path(sli_dir).glob("date=*")):
        day = d.name[5:]
        try:
            end_ms = parse_iso(day + "T00:00:00Z") + 86_400_000
        except ValueError:
            continue
        if end_ms + grace_ms <= now_ms:
            out.append(day)
    return out


def compact(sli_dir: str | Path, cache: str | Path, now_ms: int) -> list[str]:
    """One Parquet file per closed day of `sli_dir` under `cache/date=D/` (xmonitor writes a file per interval:
    8640 a day, and Spark pays per file). A day's file is named by the count of files it merged, and rebuilt
    when that count changes; cache days gone from the SLI dir are removed. Returns the days the cache holds."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    src, cache = Path(sli_dir), Path(cache)
    days = closed_days(src, now_ms)
    for gone in set(p.name[5:] for p in cache.glob("date=*")) - set(days):
        shutil.rmtree(cache / f"date={gone}", ignore_errors=True)
    for day in days:
        files = sorted((src / f"date={day}").glob("*.parquet"))
        target = cache / f"date={day}" / f"compact-{len(files)}.parquet"
        if target.exists() or not files:
            continue
        table = pa.concat_tables([pq.read_table(f) for f in files], promote_options="permissive")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, target)
        for old in target.parent.glob("compact-*.parquet"):
            if old != target:
                old.unlink()
    return [d for d in days if any((cache / f"date={d}").glob("compact-*.parquet"))]


def _duration(seconds: float) -> str:
    s = int(round(abs(seconds)))
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    if s < 2 * 86400:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} days"


def freshness(report: dict, schedule: dict | None, now_ms: int) -> dict:
    """What the page says about a report's age and trustworthiness: the age line and the warning banners."""
    as_of_ms = parse_iso(report["window"]["as_of"])
    made_ms = parse_iso(report.get("generated_at", report["window"]["as_of"]))
    line = f"Data as of {iso(as_of_ms)} ({_duration((now_ms - as_of_ms) / 1000)} ago), report made {iso(made_ms)}"
    banners: list[tuple[str, str]] = []
    if schedule:
        every_s = float(schedule["every_seconds"])
        due_ms = parse_iso(schedule["next_run"])
        line += (f"; next report in {_duration((due_ms - now_ms) / 1000)}" if due_ms >= now_ms
                 else f"; next report overdue by {_duration((now_ms - due_ms) / 1000)}")
        if now_ms - made_ms > STALE_FACTOR * every_s * 1000:
            banners.append(("stale", f"Stale: this report is {_duration((now_ms - made_ms) / 1000)} old, more than "
                                     f"{STALE_FACTOR}× the {_duration(every_s)} schedule. The report job may have "
                                     f"stopped; what follows may not be today's picture."))
    c, w = report["completeness"], report["window"]
    coverage = c.get("coverage") or 0.0
    # minutes without any row, or rows missing within minutes (a partition silent); 0.1% absorbs the mean-interval
    # estimate of the expected rows (intervals are not all exactly sli.interval.ms long)
    if c.get("steps_missing", 0) > 0 or coverage < 0.999:
        hours = c.get("hours_with_data")
        window_h = w["elapsed_seconds"] / 3600
        have = f"{hours:.1f} h of the {window_h:.0f} h window have data" if hours is not None else \
            f"the window's data is {coverage * 100:.1f}% complete"
        if c.get("steps_missing"):
            have += f", {_duration(c['steps_missing'] * STEP_MS / 1000)} without any"
        banners.append(("incomplete", f"Incomplete data: {have} ({coverage * 100:.1f}% of the expected intervals); "
                                      f"SLIs and budgets cover only that."))
    source = report.get("source") or {}
    if source.get("synthetic"):
        banners.append(("synthetic", "Synthetic data: this report is built on generated SLI intervals "
                                     "(`kafkascope slo generate`), not on the "
                                     "probe's measurements."))
    return {"line": line, "banners": banners}


def run_schedule(root: str | Path, build, every_s: float, keep: int, clock, wait, max_runs: int | None = None,
                 log=print) -> int:
    """Build, publish and prune a report every `every_s` until `wait` says stop (or `max_runs` runs).

    build(tmp_dir, now_ms) writes a report into tmp_dir (raising on failure: the run is dropped, the next one
    tries again); clock() is epoch ms; wait(seconds) sleeps up to that long and returns True to stop (an
    Event.wait in production, a fake in tests). Returns the number of reports published."""
    root = Path(root)
    every_ms = int(every_s * 1000)
    published, runs, last = 0, 0, (latest(root).name if latest(root) else None)
    while max_runs is None or runs < max_runs:
        runs += 1
        started = clock()
        if runs == 1:   # the page can say a first report is under way (and since when) before there is any
            write_schedule(root, every_s, started, last, keep)
        tmp = temp_dir(root)
        try:
            build(tmp, started)
            last = publish(root, tmp, started).name
            published += 1
        except Exception as e:  # one failed run must not end the schedule
            shutil.rmtree(tmp, ignore_errors=True)
            log(f"report run failed: {type(e).__name__}: {e}")
        prune(root, keep)
        due = next_run_ms(started, clock(), every_ms)
        write_schedule(root, every_s, due, last, keep)
        if max_runs is not None and runs >= max_runs:
            break
        if wait(max(0.0, (due - clock()) / 1000)):
            break
    return published
