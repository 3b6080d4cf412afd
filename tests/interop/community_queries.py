"""Every PromQL query of the community Kafka dashboards and alert rules kept in tests/data/community_dashboards/,
with Grafana's template variables resolved the way Grafana resolves them against a live Prometheus.

* ``dashboard_queries(path)``: every panel target (nested panels and collapsed rows included) with an ``expr``.
* ``alert_queries(path)``: every alerting/recording rule expression of a Prometheus rule file or of a
  prometheus-operator ``PrometheusRule`` (``spec.groups``); ``rule_groups(path)`` the groups as Prometheus loads
  them (annotations left out: they only render text, and Confluent's broker-alerts.yml has two that Prometheus
  refuses to load, ``{{ $label.instance }}``).
* ``Variables(dashboard).resolve(lookup)``: the values of the dashboard's template variables, in order (later ones
  interpolate earlier ones), from ``query_result(...)`` / ``label_values(...)`` / ``metrics(...)`` answered by
  ``lookup`` (a live Prometheus in the interop test, a stub in the unit test), the variable's regex applied (its
  first capture group, or ``(?<text>)``/``(?<value>)``), then a selection: include-All variables select All (their
  ``allValue``, or every value as an escaped ``(a|b)`` alternation, as Grafana's Prometheus data source formats a
  multi-value), multi-value ones every value, the others their saved current value if still offered, else the first.
* ``interpolate(expr, ...)``: Grafana's ``$var`` / ``${var}`` / ``${var:fmt}`` / ``[[var]]`` replaced. Where a
  variable is the whole or part of an equality matcher (``label="$var"``) it gets one value (the first), as a user
  picking one broker would: Grafana would write the All alternation into an ``=`` matcher, which then matches
  nothing. ``$__rate_interval`` / ``$__interval`` / ``$__range`` get concrete durations.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

DATA = Path(__file__).resolve().parents[1] / "data" / "community_dashboards"

# Grafana's variable reference syntax (public/app/features/variables/utils.ts, variableRegex).
VARIABLE_REF = re.compile(r"\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^}]+))?(?::([^}]+))?\}")
# A PromQL label matcher with a double-quoted value.
MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
# Grafana's prometheusSpecialRegexEscape: the characters escaped (with "\\" inside a PromQL string) in a multi value.
_REGEX_SPECIAL = re.compile(r"([\\^$*+?.()|{}\[\]])")
BUILTINS = ("__rate_interval", "__interval", "__range", "__range_s", "__interval_ms", "__range_ms")


@dataclass(frozen=True)
class Query:
    """One PromQL expression of a dashboard panel or a rule, as written upstream."""

    source: str  # file name, e.g. "strimzi-kafka.json"
    where: str  # "panel <title> [refId]" or "alert <name>"
    expr: str
    kind: str = "panel"  # panel | alert | record

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.source, self.where, self.expr)


@dataclass
class Variable:
    name: str
    type: str
    query: str
    regex: str = ""
    include_all: bool = False
    all_value: str | None = None
    multi: bool = False
    sort: int = 0
    current: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, v: dict) -> Variable:
        q = v.get("query")
        if isinstance(q, dict):
            q = q.get("query", "")
        cur = (v.get("current") or {}).get("value")
        cur = [] if cur in (None, "", "$__all") else ([cur] if isinstance(cur, str) else list(cur))
        return cls(name=v["name"], type=v.get("type", "query"), query=str(q or ""), regex=v.get("regex") or "",
                   include_all=bool(v.get("includeAll")), all_value=v.get("allValue") or None,
                   multi=bool(v.get("multi")), sort=int(v.get("sort") or 0), current=cur)


@dataclass
class Selection:
    """What a variable stands for once resolved: the values offered and the ones selected."""

    options: list[str]
    selected: list[str]
    all: bool = False
    all_value: str | None = None
    multi: bool = False

    def regex_text(self) -> str:
        """The text in a `=~` matcher (Grafana's interpolateQueryExpr)."""
        if self.all and self.all_value:
            return self.all_value
        if not (self.multi or self.all):
            return self.selected[0] if self.selected else ""
        vals = [_REGEX_SPECIAL.sub(r"\\\\\1", v) for v in self.selected]
        return vals[0] if len(vals) == 1 else "(" + "|".join(vals) + ")"

    def single_text(self) -> str:
        """The text in an `=` matcher or outside any matcher: one value."""
        if self.selected:
            return self.selected[0]
        return self.all_value or ""


# ---------------------------------------------------------------------------------------------- extraction


def _panels(panels: Iterable[dict]) -> Iterable[dict]:
    for p in panels:
        yield p
        yield from _panels(p.get("panels") or [])


def dashboard_queries(path: Path) -> list[Query]:
    d = json.loads(Path(path).read_text())
    panels = list(d.get("panels") or [])
    for row in d.get("rows") or []:  # old-style dashboards
        panels.extend(row.get("panels") or [])
    out = []
    for p in _panels(panels):
        for t in p.get("targets") or []:
            expr = t.get("expr")
            if expr and expr.strip():
                out.append(Query(Path(path).name, f"panel {p.get('title', '').strip()} [{t.get('refId', '')}]",
                                 expr.strip()))
    return out


def dashboard_variables(path: Path) -> list[Variable]:
    d = json.loads(Path(path).read_text())
    return [Variable.from_json(v) for v in (d.get("templating") or {}).get("list") or []]


def _rule_file_groups(path: Path) -> list[dict]:
    doc = yaml.safe_load(Path(path).read_text())
    if doc.get("kind") == "PrometheusRule":
        return doc["spec"]["groups"]
    return doc["groups"]


def alert_queries(path: Path) -> list[Query]:
    out = []
    for g in _rule_file_groups(path):
        for r in g.get("rules") or []:
            kind = "alert" if "alert" in r else "record"
            out.append(Query(Path(path).name, f"{kind} {r.get('alert') or r.get('record')}", str(r["expr"]).strip(),
                             kind))
    return out


def rule_groups(path: Path) -> dict:
    """The rule groups as a Prometheus rule file (annotations dropped, everything else unchanged)."""
    groups = []
    for g in _rule_file_groups(path):
        rules = [{k: v for k, v in r.items() if k != "annotations"} for r in g.get("rules") or []]
        groups.append({**{k: v for k, v in g.items() if k != "rules"}, "rules": rules})
    return {"groups": groups}


# ---------------------------------------------------------------------------------------------- variables

class Lookup:
    """What variable queries need from Prometheus; the interop test passes one bound to a live server."""

    def __init__(self, instant: Callable[[str], list[dict]], label_values: Callable[[str, str | None], list[str]],
                 metric_names: Callable[[], list[str]] | None = None) -> None:
        self.instant = instant  # expr -> /api/v1/query result vector
        self.label_values = label_values  # (label, series selector or None) -> values
        self.metric_names = metric_names or (lambda: label_values("__name__", None))


def query_result_text(sample: dict) -> str:
    """A vector sample as Grafana's query_result() shows it: `name{a="1", b="2"} value timestamp_ms`."""
    metric = dict(sample["metric"])
    name = metric.pop("__name__", "")
    labels = ", ".join(f'{k}="{v}"' for k, v in metric.items())
    ts, value = sample["value"]
    return f"{name}{{{labels}}} {value} {int(float(ts) * 1000)}"


def _grafana_regex(text: str) -> re.Pattern | None:
    if not text:
        return None
    m = re.fullmatch(r"/(.*)/([gimsuy]*)", text, re.S)
    body, flags = (m.group(1), m.group(2)) if m else (text, "")
    body = re.sub(r"\(\?<(\w+)>", r"(?P<\1>", body)  # JS named groups
    return re.compile(body, (re.I if "i" in flags else 0) | (re.S if "s" in flags else 0))


def _apply_regex(texts: list[str], regex: re.Pattern | None) -> list[str]:
    out: list[str] = []
    for t in texts:
        if regex is None:
            value = t
        else:
            m = regex.search(t)
            if not m:
                continue
            groups = m.groupdict()
            if groups.get("value") is not None or groups.get("text") is not None:
                value = groups.get("value") if groups.get("value") is not None else groups["text"]
            elif m.groups():
                value = next((g for g in m.groups() if g is not None), "")
            else:
                value = m.group(0)
        if value and value not in out:
            out.append(value)
    return out


def _sorted(values: list[str], sort: int) -> list[str]:
    def num(v: str) -> float:
        m = re.search(r"-?\d+(\.\d+)?", v)
        return float(m.group(0)) if m else float("inf")

    if sort in (1, 5):
        return sorted(values, key=str.lower if sort == 5 else None)
    if sort in (2, 6):
        return sorted(values, key=str.lower if sort == 6 else None, reverse=True)
    if sort == 3:
        return sorted(values, key=num)
    if sort == 4:
        return sorted(values, key=num, reverse=True)
    return values


def _variable_options(var: Variable, query: str, lookup: Lookup, selections: dict[str, Selection]) -> list[str]:
    # Grafana interpolates earlier variables into the regex too (regex-escaped), e.g. Strimzi's kafka_broker:
    # /.*pod_name="$strimzi_cluster_name-([^"]*).*/
    regex = _grafana_regex(VARIABLE_REF.sub(
        lambda m: re.escape(selections[_ref_name(m)].single_text()) if _ref_name(m) in selections else m.group(0),
        var.regex))
    if var.type == "custom":
        return _apply_regex([s.strip() for s in query.split(",") if s.strip()], regex)
    if var.type in ("constant", "textbox"):
        return [query]
    if var.type == "interval":
        return [s.strip() for s in query.split(",") if s.strip()][:1]
    q = query.strip()
    if m := re.fullmatch(r"query_result\((.*)\)", q, re.S):
        texts = [query_result_text(s) for s in lookup.instant(m.group(1))]
    elif m := re.fullmatch(r"label_values\(\s*(.*?)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)", q, re.S):
        texts = lookup.label_values(m.group(2), m.group(1))
    elif m := re.fullmatch(r"label_values\(\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)", q):
        texts = lookup.label_values(m.group(1), None)
    elif m := re.fullmatch(r"metrics\((.*)\)", q):
        pat = re.compile(m.group(1))
        texts = [n for n in lookup.metric_names() if pat.search(n)]
    else:  # a plain PromQL expression: its series as query_result shows them
        texts = [query_result_text(s) for s in lookup.instant(q)]
    return _sorted(_apply_regex(texts, regex), var.sort)


class Variables:
    """A dashboard's template variables, resolved in order against a Lookup."""

    def __init__(self, variables: list[Variable]) -> None:
        self.variables = [v for v in variables if v.type not in ("datasource", "adhoc")]
        self.selections: dict[str, Selection] = {}

    @classmethod
    def of(cls, dashboard: Path) -> Variables:
        return cls(dashboard_variables(dashboard))

    def resolve(self, lookup: Lookup, overrides: dict[str, list[str]] | None = None) -> Variables:
        overrides = overrides or {}
        for var in self.variables:
            query = interpolate(var.query, self.selections) if var.type == "query" else var.query
            options = _variable_options(var, query, lookup, self.selections)
            if var.name in overrides:
                sel = Selection(options, list(overrides[var.name]), multi=len(overrides[var.name]) > 1)
            elif var.include_all:
                sel = Selection(options, list(options), all=True, all_value=var.all_value, multi=True)
            elif var.multi:
                sel = Selection(options, list(options), multi=True)
            else:
                cur = [c for c in var.current if c in options]
                sel = Selection(options, cur[:1] or options[:1])
            self.selections[var.name] = sel
        return self

    def with_override(self, name: str, values: list[str]) -> dict[str, Selection]:
        """The selections with one variable set to `values` (e.g. one topic)."""
        sel = dict(self.selections)
        old = sel[name]
        sel[name] = Selection(old.options, list(values), multi=len(values) > 1)
        return sel


# ---------------------------------------------------------------------------------------------- interpolation

def _ref_name(m: re.Match) -> str:
    return m.group(1) or m.group(2) or m.group(4)


def _builtin(name: str, rate_interval: str, range_s: int) -> str | None:
    return {"__rate_interval": rate_interval, "__interval": rate_interval, "__interval_ms": "60000",
            "__range": f"{range_s}s", "__range_s": str(range_s), "__range_ms": str(range_s * 1000)}.get(name)


def interpolate(expr: str, selections: dict[str, Selection], *, rate_interval: str = "1m",
                range_s: int = 3600) -> str:
    """`expr` with every variable reference replaced (see the module docstring); unknown names are left as they
    are (the test then sees a query that cannot parse or has no data)."""

    # The value spans of regex matchers: a reference inside one gets the regex format, any other a single value.
    regex_spans = [m.span(3) for m in MATCHER.finditer(expr) if m.group(2) in ("=~", "!~")]

    def one(m: re.Match) -> str:
        name = _ref_name(m)
        b = _builtin(name, rate_interval, range_s)
        if b is not None:
            return b
        sel = selections.get(name)
        if sel is None:
            return m.group(0)
        in_regex = any(a <= m.start() < b for a, b in regex_spans)
        return sel.regex_text() if in_regex else sel.single_text()

    return VARIABLE_REF.sub(one, expr)


# `<expression> <comparison> <number>` (an alert condition, or a panel showing only non-zero values).
_THRESHOLD = re.compile(r"^(?P<lhs>.+?)\s*(?:==|!=|>=|<=|>|<)\s*(?:bool\s+)?-?\d+(?:\.\d+)?$", re.S)


def operand(expr: str) -> str | None:
    """The compared expression of `expr` when it is `<expression> <op> <number>`, else None: an alert that never
    fired says nothing about its metric, its operand does."""
    m = _THRESHOLD.match(expr.strip())
    return m.group("lhs").strip() if m else None


def with_operands(queries: list[Query]) -> list[Query]:
    """The queries, then the operand of each threshold query (source "<file> operands")."""
    extra = [Query(f"{q.source} operands", f"{q.where} operand", lhs, q.kind)
             for q in queries if (lhs := operand(q.expr)) is not None]
    return queries + extra


def variables_used(expr: str) -> set[str]:
    return {_ref_name(m) for m in VARIABLE_REF.finditer(expr)} - set(BUILTINS)


# ---------------------------------------------------------------------------------------------- the data set

@dataclass(frozen=True)
class Dashboard:
    family: str  # strimzi | confluent
    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    def queries(self) -> list[Query]:
        return dashboard_queries(self.path)


STRIMZI_DASHBOARDS = [Dashboard("strimzi", DATA / "strimzi" / "strimzi-kafka.json")]
STRIMZI_RULES = [DATA / "strimzi" / "prometheus-kafka-rules.yaml"]
CONFLUENT_DASHBOARDS = [Dashboard("confluent", DATA / "confluent" / f) for f in (
    "kafka-cluster.json", "kafka-topics.json", "kafka-quotas.json", "kafka-transaction-coordinator.json")]
CONFLUENT_RULES = [DATA / "confluent" / "broker-alerts.yml"]
STRIMZI_POD_MONITOR = DATA / "strimzi" / "kafka-resources-metrics.yaml"
CONFLUENT_PROMETHEUS = DATA / "confluent" / "prometheus.yml"


def pod_monitor_relabelings(path: Path = STRIMZI_POD_MONITOR) -> list[dict]:
    """The PodMonitor's relabelings as Prometheus relabel_configs (camelCase keys to snake_case)."""
    doc = yaml.safe_load(path.read_text())
    out = []
    for ep in doc["spec"]["podMetricsEndpoints"]:
        for r in ep.get("relabelings") or []:
            out.append({re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), k): v for k, v in r.items()})
    return out


def confluent_broker_job(path: Path = CONFLUENT_PROMETHEUS) -> dict:
    """The `kafka-broker` scrape job of jmx-monitoring-stacks' prometheus.yml."""
    doc = yaml.safe_load(path.read_text())
    return next(j for j in doc["scrape_configs"] if j["job_name"] == "kafka-broker")
