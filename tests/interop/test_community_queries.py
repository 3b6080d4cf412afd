"""Fast checks of the community dashboard/rule query extraction (tests/interop/community_queries.py): every target is
found, Grafana's variables are resolved and formatted as Grafana does (regex vs equality matchers, All, built-ins),
and every interpolated query is valid PromQL for promtool. The live comparison is test_community_dashboards.py."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
import yaml

from tests.interop import community_queries as cq

ALL_DASHBOARDS = cq.STRIMZI_DASHBOARDS + cq.CONFLUENT_DASHBOARDS
ALL_RULES = cq.STRIMZI_RULES + cq.CONFLUENT_RULES


def _every_expr(node) -> list[str]:
    """Every non-empty `expr` of any `targets` list anywhere in the JSON (an independent walk)."""
    out: list[str] = []
    if isinstance(node, dict):
        for t in node.get("targets") or []:
            if isinstance(t, dict) and (t.get("expr") or "").strip():
                out.append(t["expr"].strip())
        for k, v in node.items():
            if k != "targets":
                out.extend(_every_expr(v))
    elif isinstance(node, list):
        for v in node:
            out.extend(_every_expr(v))
    return out


@pytest.mark.parametrize("dash", ALL_DASHBOARDS, ids=lambda d: d.name)
def test_every_panel_target_is_extracted(dash):
    found = [q.expr for q in dash.queries()]
    assert sorted(found) == sorted(_every_expr(json.loads(dash.path.read_text())))
    assert found and all(q.source == dash.name and q.where.startswith("panel ") for q in dash.queries())


def test_known_queries_are_there():
    strimzi = {q.where: q.expr for q in cq.STRIMZI_DASHBOARDS[0].queries()}
    assert strimzi["panel Partitions under minimum ISR [A]"].startswith("sum(kafka_cluster_partition_underminisr{")
    cluster = {q.where: q.expr for q in cq.CONFLUENT_DASHBOARDS[0].queries()}
    # A panel inside a row: kafka-cluster.json keeps its panels nested in collapsed rows.
    assert "kafka_server_fetchsessioncache_numincrementalfetchsessions" in cluster[
        "panel FetchSessionCache - Sessions in cache [A]"]
    alerts = {q.where: q for q in cq.alert_queries(cq.STRIMZI_RULES[0])}
    assert alerts["alert UnderMinIsrPartitionCount"].expr == "kafka_server_replicamanager_underminisrpartitioncount > 0"
    assert len(alerts) == 9 and len(cq.alert_queries(cq.CONFLUENT_RULES[0])) == 7


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool missing (Debian package prometheus)")
@pytest.mark.parametrize("rules", ALL_RULES, ids=lambda p: p.name)
def test_rule_groups_load_in_prometheus(rules, tmp_path):
    f = tmp_path / "rules.yml"
    f.write_text(yaml.safe_dump(cq.rule_groups(rules)))
    r = subprocess.run(["promtool", "check", "rules", str(f)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert [q.expr for q in cq.alert_queries(rules)] == [
        str(r["expr"]).strip() for g in cq.rule_groups(rules)["groups"] for r in g["rules"]]


def _stub_lookup(calls: list[tuple]) -> cq.Lookup:
    """A Prometheus with three Strimzi-labelled brokers, two topics, env=dev and a few quantiles."""
    brokers = [f"127.0.0.1:{9400 + i}" for i in range(3)]

    def instant(expr: str) -> list[dict]:
        calls.append(("instant", expr))
        return [{"metric": {"__name__": expr.split("{")[0], "namespace": "myproject",
                            "strimzi_io_cluster": "my-cluster", "kubernetes_pod_name": f"my-cluster-kafka-{i}",
                            "topic": t, "partition": str(i)}, "value": [1700000000.25, "1"]}
                for i in range(3) for t in ("orders", "pay.ments")]

    def label_values(label: str, match: str | None) -> list[str]:
        calls.append(("label_values", label, match))
        return {"env": ["dev"], "instance": brokers, "quantile": ["0.50", "0.99"],
                "topic": ["orders", "pay.ments"]}.get(label, [])

    return cq.Lookup(instant, label_values)


def test_strimzi_variables_resolve_as_grafana_does():
    calls: list[tuple] = []
    v = cq.Variables.of(cq.STRIMZI_DASHBOARDS[0].path).resolve(_stub_lookup(calls))
    sel = {k: (s.selected, s.regex_text()) for k, s in v.selections.items()}
    assert sel["kubernetes_namespace"] == (["myproject"], "myproject")
    assert sel["strimzi_cluster_name"] == (["my-cluster"], "my-cluster")
    # kafka_broker's regex names the earlier variable: /.*pod_name="$strimzi_cluster_name-([^"]*).*/
    assert sel["kafka_broker"] == (["kafka-0", "kafka-1", "kafka-2"], ".*")  # All: its allValue
    assert sel["kafka_topic"][1] == ".+"
    # Later variables' queries carry the earlier ones' values.
    assert ("instant", 'kafka_server_replicamanager_leadercount{namespace="myproject",strimzi_io_cluster="my-cluster"}'
            ) in calls
    q = next(q for q in cq.STRIMZI_DASHBOARDS[0].queries() if q.where == "panel Log Size [A]")
    assert cq.interpolate(q.expr, v.selections) == (
        'kafka_log_log_size{namespace="myproject",strimzi_io_cluster="my-cluster",'
        'kubernetes_pod_name=~"my-cluster-.*",topic=~".+",partition=~".*"}')
    # One topic chosen: the value itself.
    assert 'topic=~"orders"' in cq.interpolate(q.expr, v.with_override("kafka_topic", ["orders"]))


def test_confluent_variables_all_without_all_value_and_equality_matchers():
    v = cq.Variables.of(cq.CONFLUENT_DASHBOARDS[0].path).resolve(_stub_lookup([]))
    # All with no allValue: every value, regex-escaped, as one alternation (Grafana's Prometheus formatting).
    expr = cq.interpolate('x{instance=~"$instance",env="$env",quantile=~"$percentile"}', v.selections)
    assert expr == ('x{instance=~"(127\\\\.0\\\\.0\\\\.1:9400|127\\\\.0\\\\.0\\\\.1:9401|127\\\\.0\\\\.0\\\\.1:9402)",'
                    'env="dev",quantile=~"(0\\\\.50|0\\\\.99)"}')
    # The same variable in an equality matcher: one value (an alternation would match nothing).
    assert cq.interpolate('x{instance="$instance", env="${env}"}', v.selections) == (
        'x{instance="127.0.0.1:9400", env="dev"}')
    assert cq.interpolate('rate(x{a=~"[[env]]"}[$__rate_interval]) and y[${__range}]', v.selections,
                          rate_interval="40s", range_s=600) == 'rate(x{a=~"dev"}[40s]) and y[600s]'
    # Unknown names stay as written (the live test then reports a query Prometheus rejects).
    assert cq.interpolate("x[$nope]", v.selections) == "x[$nope]"


def test_threshold_operands():
    assert cq.operand("kafka_server_replicamanager_underreplicatedpartitions > 0") == (
        "kafka_server_replicamanager_underreplicatedpartitions")
    assert cq.operand('up{a!~"x-.+",b=~".+-kafka-[0-9]+"} == 0') == 'up{a!~"x-.+",b=~".+-kafka-[0-9]+"}'
    assert cq.operand("sum by (env) (x) != 1") == "sum by (env) (x)"
    assert cq.operand("x >= 0.4") == "x" and cq.operand("x < bool 1") == "x"
    assert cq.operand("count(a[5m]) > 2 * count(b)") is None and cq.operand("sum(rate(x[5m]))") is None
    qs = cq.with_operands(cq.alert_queries(cq.STRIMZI_RULES[0]))
    ops = [q for q in qs if q.source == "prometheus-kafka-rules.yaml operands"]
    assert ("alert OfflineLogDirectoryCount operand", "kafka_log_logmanager_offlinelogdirectorycount") in [
        (q.where, q.expr) for q in ops]
    assert len(ops) == 7 and qs[:9] == cq.alert_queries(cq.STRIMZI_RULES[0])


def test_query_result_text_is_grafanas():
    s = {"metric": {"__name__": "m", "a": "1", "b": "x y"}, "value": [1700000000.5, "3"]}
    assert cq.query_result_text(s) == 'm{a="1", b="x y"} 3 1700000000500'


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool missing (Debian package prometheus)")
def test_every_interpolated_query_is_valid_promql(tmp_path):
    rules = []
    for d in ALL_DASHBOARDS:
        v = cq.Variables.of(d.path).resolve(_stub_lookup([]))
        for q in d.queries():
            e = cq.interpolate(q.expr, v.selections)
            assert not cq.variables_used(e), f"{d.name} | {q.where}: unresolved {cq.variables_used(e)} in {e}"
            rules.append({"record": f"q_{len(rules)}", "expr": e})
    f = tmp_path / "queries.yml"
    f.write_text(yaml.safe_dump({"groups": [{"name": "all", "rules": rules}]}))
    r = subprocess.run(["promtool", "check", "rules", str(f)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(rules) == sum(len(d.queries()) for d in ALL_DASHBOARDS) > 100


def test_data_readme_names_every_file_with_its_commits():
    readme = (cq.DATA / "README.md").read_text()
    files = sorted(p.relative_to(cq.DATA).as_posix() for p in cq.DATA.rglob("*")
                   if p.is_file() and p.name != "README.md")
    for f in files:
        row = next((line for line in readme.splitlines() if line.startswith(f"| `{f}` |")), None)
        assert row, f"{f} is not listed in {cq.DATA / 'README.md'}"
        assert len(re.findall(r"\b[0-9a-f]{40}\b", row)) == 2, row
