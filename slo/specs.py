"""SLO specs: an OpenSLO v1 subset in YAML, read into typed dataclasses; errors name the bad field.

Read: `apiVersion: openslo/v1`, `kind: SLO`, `metadata.name`/`displayName`, `spec.budgetingMethod`
(Occurrences | Timeslices | RatioTimeslices), `spec.timeWindow` (one item: rolling `{duration, isRolling: true}` or
calendar-aligned `{duration: 1w|1M|1Q|..., isRolling: false, calendar: {startTime, timeZone}}`), and
`spec.objectives[0]` (`target`, optional `timeSliceTarget`, `timeSliceWindow`; for latency `op: lte` and `value`).
The indicator is one of
  - `ratioMetric: {good: FIELD, total: FIELD}` over the SLI fields below (xmonitor's columns or derived ones);
  - `latency: {histogram: e2e_latency_hdr | produce_latency_hdr, threshold: 500ms}`: good = samples <= threshold;
  - `lagStatus: {source: lag-history}`: share of evaluated time each consumer group was OK (the lag-history job).
Several documents may share one file (`---`), all with the same timeWindow (one report has one window).
Everything else in a document is ignored.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import zoneinfo
from pathlib import Path

import yaml

DEFAULT_SPEC = Path(__file__).parent / "specs" / "default.yaml"

METHODS = ("Occurrences", "Timeslices", "RatioTimeslices")
HISTOGRAMS = ("e2e_latency_hdr", "produce_latency_hdr")
# SLI fields a ratioMetric may name: column name -> Spark SQL expression over the SLI_SCHEMA row
FIELDS = {
    "produce_attempts": "produce_attempts",
    "produce_successes": "produce_successes",
    "produce_errors": "aggregate(map_values(produce_errors), 0L, (a, x) -> a + x)",
    "records_consumed": "records_consumed",
    "records_lost": "records_lost",
    "records_duplicated": "records_duplicated",
    "records_out_of_order": "records_out_of_order",
    "records_late": "records_late",
    "records_on_time": "records_consumed - records_late",
    "records_expected": "records_consumed + records_lost",
    "records_not_lost": "records_consumed",
}


class SpecError(ValueError):
    """An invalid spec; the message names the document and field."""


@dataclasses.dataclass(frozen=True)
class Objective:
    target: float
    time_slice_target: float = 1.0
    time_slice_window_s: int = 60
    display_name: str = ""


@dataclasses.dataclass(frozen=True)
class Calendar:
    """A calendar-aligned window (OpenSLO `isRolling: false`): periods of `count` x `unit` (m h d w M Q Y) from
    `start`, a wall-clock time in `time_zone`. Day units and longer keep that wall-clock time across DST changes
    (a day can be 23 or 25 h); a month anchored on the 29th-31st starts on the last day of shorter months."""
    start: dt.datetime  # naive, wall-clock in time_zone
    time_zone: str
    count: int
    unit: str

    def _at(self, n: int) -> dt.datetime:
        """Start of the n-th period from the anchor (aware)."""
        zone = zoneinfo.ZoneInfo(self.time_zone)
        a = self.start
        if self.unit in _CAL_FIXED:  # minutes and hours: absolute time
            return a.replace(tzinfo=zone) + dt.timedelta(seconds=n * self.count * _CAL_FIXED[self.unit])
        if self.unit in _CAL_DAYS:
            return (a + dt.timedelta(days=n * self.count * _CAL_DAYS[self.unit])).replace(tzinfo=zone)
        months = a.year * 12 + a.month - 1 + n * self.count * _CAL_MONTHS[self.unit]
        y, m = divmod(months, 12)
        last = (dt.date(y + (m + 1) // 12, (m + 1) % 12 + 1, 1) - dt.timedelta(days=1)).day
        return a.replace(year=y, month=m + 1, day=min(a.day, last), tzinfo=zone)

    def period(self, at_ms: int) -> tuple[int, int]:
        """[start_ms, end_ms) of the period that contains the instant at_ms."""
        at = dt.datetime.fromtimestamp(at_ms / 1000, zoneinfo.ZoneInfo(self.time_zone))
        a = self.start
        if self.unit in _CAL_FIXED:
            elapsed = at - a.replace(tzinfo=at.tzinfo)
            n = int(elapsed.total_seconds() // (self.count * _CAL_FIXED[self.unit]))
        elif self.unit in _CAL_DAYS:
            n = (at.date() - a.date()).days // (self.count * _CAL_DAYS[self.unit])
        else:
            n = ((at.year - a.year) * 12 + at.month - a.month) // (self.count * _CAL_MONTHS[self.unit])
        if _ms(self._at(n)) > at_ms:  # same date/month as the period start but before its wall-clock time
            n -= 1
        return _ms(self._at(n)), _ms(self._at(n + 1))


_CAL_FIXED = {"m": 60, "h": 3600}
_CAL_DAYS = {"d": 1, "w": 7}
_CAL_MONTHS = {"M": 1, "Q": 3, "Y": 12}


def _ms(t: dt.datetime) -> int:
    return int(t.timestamp() * 1000)


@dataclasses.dataclass(frozen=True)
class SLOSpec:
    name: str
    display_name: str
    budgeting_method: str
    window_s: int
    rolling: bool
    objective: Objective
    kind: str                     # "ratio" | "latency" | "lag"
    calendar: Calendar | None = None  # set for calendar-aligned windows (rolling is False)
    good: str | None = None       # ratio: SLI field names
    total: str | None = None
    histogram: str | None = None  # latency
    threshold_us: int | None = None

    @property
    def budget(self) -> float:
        return 1.0 - self.objective.target


_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$")


def parse_duration(text: str | int | float) -> float:
    """'14d', '1h', '500ms', '10s' -> seconds; a bare number is seconds."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return float(text)
    m = _DURATION.match(str(text).strip())
    if not m:
        raise ValueError(f"not a duration: {text!r} (use e.g. 500ms, 10s, 5m, 1h, 14d)")
    return float(m.group(1)) * _UNITS[m.group(2)]


def _get(doc: dict, path: str, where: str):
    node = doc
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            raise SpecError(f"{where}: missing field {path}")
        node = node[key]
    return node


def _duration(value, field: str, where: str) -> float:
    try:
        seconds = parse_duration(value)
    except ValueError as e:
        raise SpecError(f"{where}: {field}: {e}") from None
    if seconds <= 0:
        raise SpecError(f"{where}: {field}: must be positive, got {value!r}")
    return seconds


def _fraction(value, field: str, where: str, *, open_low: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(f"{where}: {field}: must be a number in (0, 1), got {value!r}")
    if not (0 < value < 1 if open_low else 0 < value <= 1):
        raise SpecError(f"{where}: {field}: must be in (0, 1{')' if open_low else ']'}, got {value!r}")
    return float(value)


def _calendar(window: dict, duration, where: str) -> Calendar:
    f = "spec.timeWindow[0]"
    cal = window.get("calendar")
    if not isinstance(cal, dict):
        raise SpecError(f"{where}: {f}.calendar: required (a mapping with startTime and timeZone) when isRolling "
                        f"is false")
    m = re.fullmatch(r"([1-9]\d*)([mhdwMQY])", str(duration).strip())
    if not m:
        raise SpecError(f"{where}: {f}.duration: a calendar window needs a whole number of m, h, d, w, M, Q or Y, "
                        f"got {duration!r}")
    for key in ("startTime", "timeZone"):
        if key not in cal:
            raise SpecError(f"{where}: {f}.calendar.{key}: missing")
    start = cal["startTime"]
    if isinstance(start, dt.date) and not isinstance(start, dt.datetime):
        start = dt.datetime.combine(start, dt.time())
    if not isinstance(start, dt.datetime):  # YAML reads an unquoted 2022-01-01 12:00:00 as a datetime already
        try:
            start = dt.datetime.strptime(str(start).strip(), "%Y-%m-%d %H:%M:%S")
        except ValueError:
            raise SpecError(f"{where}: {f}.calendar.startTime: must be a date with time, without time zone "
                            f"(e.g. 2026-01-01 00:00:00), got {start!r}") from None
    if start.tzinfo is not None:
        raise SpecError(f"{where}: {f}.calendar.startTime: must not carry a time zone (use calendar.timeZone)")
    zone = cal["timeZone"]
    try:
        zoneinfo.ZoneInfo(str(zone))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise SpecError(f"{where}: {f}.calendar.timeZone: not an IANA time zone name: {zone!r}") from None
    return Calendar(start, str(zone), int(m.group(1)), m.group(2))


def _time_window(windows, where: str) -> tuple[float, bool, Calendar | None]:
    """(seconds, rolling, calendar); a calendar window's seconds are those of its period containing the anchor."""
    if not isinstance(windows, list) or len(windows) != 1 or not isinstance(windows[0], dict):
        raise SpecError(f"{where}: spec.timeWindow: must be a list of one {{duration, isRolling[, calendar]}}")
    w = windows[0]
    duration = _get(w, "duration", f"{where}: spec.timeWindow[0]")
    rolling = w.get("isRolling", "calendar" not in w)  # OpenSLO: omitted means false when calendar is present
    if not isinstance(rolling, bool):
        raise SpecError(f"{where}: spec.timeWindow[0].isRolling: must be true or false")
    if rolling:
        if "calendar" in w:
            raise SpecError(f"{where}: spec.timeWindow[0].calendar: only for isRolling: false")
        return _duration(duration, "spec.timeWindow[0].duration", where), True, None
    cal = _calendar(w, duration, where)
    lo, hi = cal.period(_ms(cal.start.replace(tzinfo=zoneinfo.ZoneInfo(cal.time_zone))))
    return (hi - lo) / 1000, False, cal


def parse_spec(doc: dict, where: str = "spec") -> SLOSpec:
    if not isinstance(doc, dict):
        raise SpecError(f"{where}: a document must be a mapping")
    if doc.get("apiVersion") != "openslo/v1":
        raise SpecError(f"{where}: apiVersion: must be openslo/v1, got {doc.get('apiVersion')!r}")
    if doc.get("kind") != "SLO":
        raise SpecError(f"{where}: kind: must be SLO, got {doc.get('kind')!r}")
    name = _get(doc, "metadata.name", where)
    if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
        raise SpecError(f"{where}: metadata.name: must be a DNS-style name, got {name!r}")
    where = f"{where} ({name})"
    method = _get(doc, "spec.budgetingMethod", where)
    if method not in METHODS:
        raise SpecError(f"{where}: spec.budgetingMethod: must be one of {', '.join(METHODS)}, got {method!r}")
    window_s, rolling, calendar = _time_window(_get(doc, "spec.timeWindow", where), where)
    objectives = _get(doc, "spec.objectives", where)
    if not isinstance(objectives, list) or len(objectives) != 1 or not isinstance(objectives[0], dict):
        raise SpecError(f"{where}: spec.objectives: must be a list of exactly one objective")
    o = objectives[0]
    target = _fraction(_get(o, "target", f"{where}: spec.objectives[0]"), "spec.objectives[0].target", where)
    ts_target = _fraction(o.get("timeSliceTarget", 1.0), "spec.objectives[0].timeSliceTarget", where,
                          open_low=False)
    ts_window = _duration(o.get("timeSliceWindow", "1m"), "spec.objectives[0].timeSliceWindow", where)
    if method != "Occurrences" and "timeSliceWindow" not in o:
        raise SpecError(f"{where}: spec.objectives[0].timeSliceWindow: required for {method}")
    if ts_window < 1 or ts_window != int(ts_window) or window_s % ts_window:
        raise SpecError(f"{where}: spec.objectives[0].timeSliceWindow: must be whole seconds dividing the window")
    objective = Objective(target, ts_target, int(ts_window), str(o.get("displayName", "")))
    indicator = _get(doc, "spec.indicator.spec", where)
    if not isinstance(indicator, dict) or len(indicator) != 1:
        raise SpecError(f"{where}: spec.indicator.spec: must hold exactly one of ratioMetric, latency, lagStatus")
    common = dict(name=name, display_name=str(doc.get("metadata", {}).get("displayName", name)),
                  budgeting_method=method, window_s=int(window_s), rolling=rolling, objective=objective,
                  calendar=calendar)
    if "ratioMetric" in indicator:
        rm = indicator["ratioMetric"]
        for key in ("good", "total"):
            value = rm.get(key) if isinstance(rm, dict) else None
            if value not in FIELDS:
                raise SpecError(f"{where}: spec.indicator.spec.ratioMetric.{key}: unknown SLI field {value!r} "
                                f"(one of {', '.join(FIELDS)})")
        return SLOSpec(kind="ratio", good=rm["good"], total=rm["total"], **common)
    if "latency" in indicator:
        lat = indicator["latency"]
        hist = lat.get("histogram") if isinstance(lat, dict) else None
        if hist not in HISTOGRAMS:
            raise SpecError(f"{where}: spec.indicator.spec.latency.histogram: must be one of {', '.join(HISTOGRAMS)}, "
                            f"got {hist!r}")
        threshold = lat.get("threshold", o.get("value"))
        if threshold is None:
            raise SpecError(f"{where}: spec.indicator.spec.latency.threshold: missing")
        if o.get("op", "lte") != "lte":
            raise SpecError(f"{where}: spec.objectives[0].op: only lte is supported, got {o.get('op')!r}")
        seconds = _duration(threshold, "spec.indicator.spec.latency.threshold", where)
        return SLOSpec(kind="latency", histogram=hist, threshold_us=int(round(seconds * 1e6)), **common)
    if "lagStatus" in indicator:
        return SLOSpec(kind="lag", **common)
    raise SpecError(f"{where}: spec.indicator.spec: unknown indicator {next(iter(indicator))!r} "
                    f"(ratioMetric, latency or lagStatus)")


def load_specs(path: str | Path | None = None) -> list[SLOSpec]:
    """All SLO documents of a YAML file (the shipped defaults when `path` is None)."""
    path = Path(path) if path else DEFAULT_SPEC
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    except yaml.YAMLError as e:
        raise SpecError(f"{path}: not valid YAML: {e}") from None
    specs = [parse_spec(d, f"{path.name}[{i}]") for i, d in enumerate(docs)]
    if not specs:
        raise SpecError(f"{path}: no SLO documents")
    names = [s.name for s in specs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SpecError(f"{path}: metadata.name: duplicate {sorted(dup)}")
    for s in specs[1:]:
        if (s.window_s, s.rolling, s.calendar) != (specs[0].window_s, specs[0].rolling, specs[0].calendar):
            raise SpecError(f"{path} ({s.name}): spec.timeWindow: differs from {specs[0].name}'s; the SLOs of one "
                            f"report share one time window")
    return specs
