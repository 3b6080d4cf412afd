"""Public kafka_exporter alert rules (dashboards/prometheus/community/, fetched, source in each header) fire on the
lag monitor's own /metrics: each `promtool test rules` case feeds pages rendered by a real LagMonitor at every
1-minute step (as a scrape would, plus job/instance), with the rule's condition made to hold part of the time."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace as NS

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from dashboards import build
from lagmonitor import topics
from lagmonitor.api import LagAPI
from lagmonitor.config import LagConfig
from lagmonitor.evaluator import EvaluatorConfig
from lagmonitor.monitor import LagMonitor
from lagmonitor.storage import StorageConfig

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="Debian package `prometheus` (promtool) not installed")
COMMUNITY = sorted((build.PROMETHEUS_DIR / "community").glob("*.rules.yml"))
SCRAPE = {"job": build.JOB_LAG, "instance": "127.0.0.1:8000"}
T0 = 1_700_000_000_000
STEP_MS = 60_000


def community_rules() -> dict[str, tuple[Path, dict]]:
    return {r["alert"]: (f, r) for f in COMMUNITY for g in yaml.safe_load(f.read_text())["groups"]
            for r in g["rules"]}


# ------------------------------------------------------------------------------------------------ our pages


def cluster_md(isr: dict[tuple[str, int], list[int]]) -> NS:
    """Metadata of brokers 1-3 with RF-3 partitions led by their first replica, ISR as given."""
    brokers = {i: NS(id=i, host="127.0.0.1", port=9091 + i) for i in (1, 2, 3)}
    parts: dict[str, dict] = {}
    for (t, p), members in isr.items():
        replicas = [1 + (p + k) % 3 for k in range(3)]
        parts.setdefault(t, {})[p] = NS(id=p, leader=replicas[0], replicas=replicas, isrs=members, error=None)
    return NS(brokers=brokers, topics={t: NS(topic=t, partitions=ps, error=None) for t, ps in parts.items()})


def pages(steps: int, step: Callable[[LagMonitor, int, int], None]) -> list[str]:
    """/metrics of one LagMonitor after `step(monitor, i, now_ms)` for i in 0..steps-1."""
    m = LagMonitor(LagConfig(storage=StorageConfig(intervals=5), evaluator=EvaluatorConfig(expire_cache_s=0)))
    out = []
    for i in range(steps):
        now = T0 + i * STEP_MS
        step(m, i, now)
        out.append(LagAPI(m, lambda now=now: now).metrics())
    return out


def input_series(texts: list[str]) -> list[dict]:
    """promtool input_series: every sample of every page, labelled as scraped, '_' where a page lacks it."""
    steps: dict[str, dict[int, float]] = {}
    for i, text in enumerate(texts):
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                labels = {**s.labels, **SCRAPE}
                sel = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
                steps.setdefault(f"{s.name}{{{sel}}}", {})[i] = s.value
    return [{"series": name, "values": " ".join(f"{v[i]:g}" if i in v else "_" for i in range(len(texts)))}
            for name, v in steps.items()]


# ------------------------------------------------------------------------------------------------ expectations


def render(template: str, labels: dict[str, str], value: float) -> str:
    """Prometheus's alert template expansion for what these rules use: $labels.x (empty when the alert has no
    such label, e.g. `instance` after a `by (topic)`), $labels (Go's map print) and $value (%v of a float)."""
    def one(m: re.Match) -> str:
        expr = m.group(1)
        if expr == "$value":
            return str(int(value)) if float(value).is_integer() else repr(value)
        if expr == "$labels":
            return "map[" + " ".join(f"{k}:{v}" for k, v in sorted(labels.items())) + "]"
        return labels.get(expr.removeprefix("$labels."), "")

    return re.sub(r"\{\{\s*(\$[a-zA-Z_.]+)\s*\}\}", one, template)


def expect(alert: str, value: float, **labels: str) -> dict:
    """An exp_alerts entry: the expression's labels `labels` plus the rule's, annotations as Prometheus renders."""
    _, rule = community_rules()[alert]
    return {"exp_labels": {**labels, **rule["labels"]},
            "exp_annotations": {k: render(v, labels, value) for k, v in rule["annotations"].items()}}


# ------------------------------------------------------------------------------------------------ cases


def under_replicated_case() -> dict:
    """t-1 loses a follower from the ISR at minute 3 (t-0 stays whole)."""
    def step(m, i, now):
        m.cluster_meta = topics.from_metadata(cluster_md({("t", 0): [1, 2, 3],
                                                          ("t", 1): [2, 3] if i >= 3 else [2, 3, 1]}), now)

    a = "UnderReplicatedPartition"
    lab = {"topic": "t", "partition": "1", **SCRAPE}
    return {"texts": pages(12, step), "checks": [
        ("2m", a, []), ("4m", a, [expect(a, 1, **lab)]), ("10m", a, [expect(a, 1, **lab)])]}


def topics_replicas_case() -> dict:
    """The smallest ISR of topic t drops to 2 at minute 3; topic u keeps 3 everywhere."""
    def step(m, i, now):
        m.cluster_meta = topics.from_metadata(cluster_md({("t", 0): [1, 2, 3], ("t", 1): [2, 3] if i >= 3 else
                                                          [2, 3, 1], ("u", 0): [1, 2, 3]}), now)

    a = "KafkaTopicsReplicas"
    return {"texts": pages(8, step), "checks": [("2m", a, []), ("3m", a, [expect(a, 2, topic="t")]),
                                                ("7m", a, [expect(a, 2, topic="t")])]}


def _consumer_step(lags: Callable[[int], dict[tuple[str, str, int], int | None]]):
    """Each minute: log ends of t-0..2 at 100,000 + 100 i; group commits at end - lag (None: never committed)."""
    order = iter(range(1, 10 ** 6))

    def step(m, i, now):
        end = 100_000 + 100 * i
        m.broker_offsets({("t", p): end for p in range(3)}, {"t": 3}, now)
        for (group, t, p), lag in lags(i).items():
            if lag is not None:
                m.commit(group, t, p, end - lag, now - 1000, next(order), now)
    return step


def too_large_lag_case() -> dict:
    """Group g lags 100 on t-0, then 5,000 from minute 3; its t-1 was never committed (lag -1); group h sits at
    exactly 1,000, which is not over the threshold."""
    step = _consumer_step(lambda i: {("g", "t", 0): 5000 if i >= 3 else 100, ("g", "t", 1): None,
                                     ("h", "t", 0): 1000})
    a = "TooLargeConsumerGroupLag"
    lab = {"consumergroup": "g", "topic": "t", "partition": "0", **SCRAPE}
    return {"texts": pages(8, step), "checks": [("2m", a, []), ("4m", a, [expect(a, 5000, **lab)])]}


def group_lag_case() -> dict:
    """Group g: 6,000 behind on t-0 and t-2 from minute 3, t-1 never committed (kafka_consumergroup_lag -1, which
    this rule's plain sum counts: 11,999); group h: 9,000 on one partition, under the 10,000 threshold."""
    step = _consumer_step(lambda i: {("g", "t", 0): 6000 if i >= 3 else 10, ("g", "t", 1): None,
                                     ("g", "t", 2): 6000 if i >= 3 else 10, ("h", "t", 0): 9000})
    a = "KafkaConsumerGroupLag"
    return {"texts": pages(8, step), "checks": [("3m", a, []), ("5m", a, [expect(a, 11999, consumergroup="g")])]}


def no_message_case() -> dict:
    """t-0 takes a message every minute until minute 5, t-1 none after its first one; 10-minute window."""
    def step(m, i, now):
        m.broker_offsets({("t", 0): 10 + min(i, 5), ("t", 1): 7}, {"t": 2}, now)

    a = "NoMessageForTooLong"
    idle = {"topic": "t", "partition": "1", **SCRAPE}
    stopped = {"topic": "t", "partition": "0", **SCRAPE}
    return {"texts": pages(20, step), "checks": [
        ("12m", a, [expect(a, 0, **idle)]),                               # t-0's last message is in the window
        ("17m", a, [expect(a, 0, **stopped), expect(a, 0, **idle)])]}     # 10 minutes without one on both


CASES = {"UnderReplicatedPartition": under_replicated_case, "KafkaTopicsReplicas": topics_replicas_case,
         "TooLargeConsumerGroupLag": too_large_lag_case, "KafkaConsumerGroupLag": group_lag_case,
         "NoMessageForTooLong": no_message_case}


# ------------------------------------------------------------------------------------------------ tests


@needs_promtool
def test_promtool_check_community_rules():
    r = subprocess.run([PROMTOOL, "check", "rules", *map(str, COMMUNITY)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_community_rule_has_a_case_and_names_its_source():
    assert COMMUNITY and set(CASES) == set(community_rules())
    for f in COMMUNITY:
        head = f.read_text().split("groups:", 1)[0]
        assert re.search(r"# Source: https://github.com/\S+/\S+\n#\s+path:\s+\S+\n#\s+commit:\s+[0-9a-f]{40}\n",
                         head), f


@needs_promtool
@pytest.mark.parametrize("alert", sorted(CASES))
def test_rule_fires_on_the_lag_monitors_metrics(tmp_path, alert):
    case = CASES[alert]()
    path, _ = community_rules()[alert]
    test = {"rule_files": [str(path)], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": input_series(case["texts"]),
        "alert_rule_test": [{"eval_time": t, "alertname": a, "exp_alerts": exp} for t, a, exp in case["checks"]]}]}
    (tmp_path / "t.test.yml").write_text(yaml.safe_dump(test, sort_keys=False, width=10 ** 9))
    r = subprocess.run([PROMTOOL, "test", "rules", "t.test.yml"], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 0, f"{alert}:\n{r.stdout[-6000:]}\n{r.stderr[-3000:]}"
