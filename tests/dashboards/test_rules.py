"""The generated Prometheus rules: promtool check, `promtool test rules` for every alert (fires when its cause
is there, quiet otherwise, every burn-rate window pair of every SLO), staleness, and a runbook per alert."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from dashboards import build

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="Debian package `prometheus` (promtool) not installed")
REPO = Path(build.__file__).resolve().parents[1]
RULES = [build.PROMETHEUS_DIR / f for f in build.RULE_FILES]


def test_generated_files_are_fresh():
    stale = build.write(check=True)
    assert not stale, f"run `python -m dashboards.build`: stale {[str(p) for p in stale]}"


@needs_promtool
def test_promtool_check_rules_and_config():
    r = subprocess.run([PROMTOOL, "check", "rules", *map(str, RULES)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([PROMTOOL, "check", "config", str(build.PROMETHEUS_DIR / "prometheus.example.yml")],
                       capture_output=True, text=True, timeout=60, cwd=build.PROMETHEUS_DIR)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_alert_has_labels_annotations_and_a_runbook():
    for g in build.alerting_rules()["groups"]:
        for rule in g["rules"]:
            assert rule["labels"]["severity"] in ("page", "ticket"), rule
            ann = rule["annotations"]
            assert ann["summary"] and ann["description"], rule
            assert ann["runbook_url"] == f"docs/runbooks/{rule['alert']}.md"
    for name in build.alert_names():
        text = (REPO / "docs" / "runbooks" / f"{name}.md").read_text()
        for section in ("What it means", "How to confirm", "What to do", "When to escalate"):
            assert f"## {section}" in text, f"{name}.md lacks '## {section}'"


# ------------------------------------------------------------------------------------------------ templates


def _go_g4(v: float) -> str:
    return f"{v:.4g}"


def _value(v: float) -> str:  # Go's %v of a float64 (values in these tests are small)
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e6 else repr(v)


def _humanize(v: float) -> str:
    if v == 0 or math.isnan(v) or math.isinf(v):
        return _go_g4(v)
    if abs(v) >= 1:
        prefix = ""
        for p in ("k", "M", "G", "T", "P", "E", "Z", "Y"):
            if abs(v) < 1000:
                break
            prefix, v = p, v / 1000
        return _go_g4(v) + prefix
    prefix = ""
    for p in ("m", "u", "n", "p", "f", "a", "z", "y"):
        if abs(v) >= 1:
            break
        prefix, v = p, v * 1000
    return _go_g4(v) + prefix


def _humanize1024(v: float) -> str:
    if abs(v) <= 1:
        return _go_g4(v)
    prefix = ""
    for p in ("ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"):
        if abs(v) < 1024:
            break
        prefix, v = p, v / 1024
    return _go_g4(v) + prefix


def _humanize_duration(v: float) -> str:  # Prometheus' humanizeDuration for |v| >= 1 s
    sign, n = ("-", int(-v)) if v < 0 else ("", int(v))
    d, h, m, s = n // 86400, n // 3600 % 24, n // 60 % 60, n % 60
    if d:
        return f"{sign}{d}d {h}h {m}m {s}s"
    if h:
        return f"{sign}{h}h {m}m {s}s"
    return f"{sign}{m}m {s}s" if m else f"{sign}{_go_g4(abs(v))}s"


FUNCS = {None: _value, "humanize": _humanize, "humanize1024": _humanize1024,
         "humanizePercentage": lambda v: _go_g4(v * 100) + "%", "humanizeDuration": _humanize_duration}


def render(template: str, labels: dict, value: float) -> str:
    def one(m: re.Match) -> str:
        expr, func = m.group(1).strip(), m.group(2)
        if expr.startswith("$labels."):
            return labels.get(expr[len("$labels."):], "")
        assert expr == "$value", expr
        return FUNCS[func.strip() if func else None](value)

    return re.sub(r"\{\{\s*([^|}]+?)\s*(?:\|\s*([a-zA-Z0-9]+)\s*)?\}\}", one, template)


def _rule(alert: str, labels: dict) -> dict:
    for g in build.alerting_rules()["groups"]:
        for r in g["rules"]:
            if r["alert"] == alert and all(labels.get(k) == v for k, v in r["labels"].items()):
                return r
    raise KeyError((alert, labels))


def expect(alert: str, value: float, **labels: str) -> dict:
    """An exp_alerts entry: rule labels + `labels`, annotations rendered as Prometheus would."""
    rule = _rule(alert, {**labels, "severity": labels.get("severity", "")} if "severity" in labels else
                 _guess(alert, labels))
    all_labels = {**rule["labels"], **labels}
    ann = {k: render(v, all_labels, value) for k, v in rule["annotations"].items()}
    return {"exp_labels": all_labels, "exp_annotations": ann}


def _guess(alert: str, labels: dict) -> dict:
    for g in build.alerting_rules()["groups"]:
        for r in g["rules"]:
            if r["alert"] == alert and all(labels.get(k, v) == v for k, v in r["labels"].items()
                                           if k != "severity"):
                return {**labels, "severity": r["labels"]["severity"]}
    raise KeyError(alert)


# ------------------------------------------------------------------------------------------------ cases

B0 = 'job="kafka-broker",instance="b0:9404"'
B1 = 'job="kafka-broker",instance="b1:9404"'
I0 = {"job": "kafka-broker", "instance": "b0:9404"}
I1 = {"job": "kafka-broker", "instance": "b1:9404"}


def case(alert: str, series: list[tuple[str, str]], checks: list[tuple[str, list[dict]]],
         interval: str = "1m") -> dict:
    return {"interval": interval, "input_series": [{"series": s, "values": v} for s, v in series],
            "alert_rule_test": [{"eval_time": t, "alertname": alert, "exp_alerts": exp} for t, exp in checks]}


def basic_cases() -> dict[str, list[dict]]:
    c: dict[str, list[dict]] = {}
    a = "KafkaUnderReplicatedPartitions"
    c[a] = [case(a, [(f"{build.M.under_replicated}{{{B0}}}", "0x20"),
                     (f"{build.M.under_replicated}{{{B1}}}", "0 0 0 2x20")],
                 [("2m", []), ("3m", []), ("5m", [expect(a, 2, **I1)])])]
    a = "KafkaUnderMinIsrPartitions"
    c[a] = [case(a, [(f"{build.M.under_min_isr}{{{B0}}}", "0x20"), (f"{build.M.under_min_isr}{{{B1}}}", "0 0 1x20")],
                 [("1m", []), ("2m", []), ("4m", [expect(a, 1, **I1)])])]
    a = "KafkaOfflinePartitions"
    c[a] = [case(a, [(f"{build.M.offline_partitions}{{{B0}}}", "0 0 0 3x10"),
                     (f"{build.M.offline_partitions}{{{B1}}}", "0x13")],
                 [("2m", []), ("3m", []), ("6m", [expect(a, 3)])])]
    a = "KafkaActiveControllerCountNotOne"
    c[a] = [case(a, [(f"{build.M.active_controller}{{{B0}}}", "1 1 1 1 0 0 0 0 1 1 1 1 1 1 1 1"),
                     (f"{build.M.active_controller}{{{B1}}}", "0 0 0 0 0 0 0 0 0 0 1 1 1 1 1 1")],
                 [("3m", []), ("4m", []), ("6m", [expect(a, 0)]), ("9m", []), ("13m", [expect(a, 2)])])]
    a = "KafkaIsrShrinkRateHigh"
    c[a] = [case(a, [(f"{build.M.isr_shrinks}{{{B0}}}", "0+1x30"),       # 10 per 10m: flapping
                     (f"{build.M.isr_shrinks}{{{B1}}}", "0 0 1 1 1x30")],  # one shrink: quiet
                 [("2m", []), ("20m", [expect(a, 10, **I0)])])]
    a = "KafkaBrokerDown"
    c[a] = [case(a, [(f"up{{{B0}}}", "1x20"), (f"up{{{B1}}}", "1 1 0x20"),
                     ('up{job="xmonitor",instance="x:1"}', "0x20")],
                 [("1m", []), ("2m", []), ("5m", [expect(a, 0, **I1)])])]
    zk = 'zk_host="z{}:2181"'
    a = "ZooKeeperLeaderCountNotOne"
    c[a] = [
        case(a, [(f"{build.M.zk_up}{{{zk.format(i)}}}", "1x20") for i in range(3)] +
                [(f"{build.M.zk_leader}{{{zk.format(0)}}}", "1 1 1 0x20"),
                 (f"{build.M.zk_leader}{{{zk.format(1)}}}", "0x20"), (f"{build.M.zk_leader}{{{zk.format(2)}}}", "0x20")],
             [("2m", []), ("3m", []), ("6m", [expect(a, 0)])]),
        # a standalone server reports no leader but is the one: quiet; no ZooKeeper exporter at all: quiet
        case(a, [(f"{build.M.zk_up}{{{zk.format(0)}}}", "1x10"), (f"{build.M.zk_leader}{{{zk.format(0)}}}", "0x10"),
                 (f'{build.M.zk_state}{{{zk.format(0)},state="standalone"}}', "1x10"),
                 (f'{build.M.zk_state}{{{zk.format(0)},state="leader"}}', "0x10")],
             [("5m", [])]),
        case(a, [(f"up{{{B0}}}", "1x10")], [("5m", [])]),
    ]
    for a, req, rate_req, thr in (("KafkaProduceLatencyHigh", "Produce", "Produce", build.PRODUCE_P99_MS),
                                  ("KafkaFetchLatencyHigh", "FetchConsumer", "Fetch", build.FETCH_P99_MS)):
        q = f'{build.M.total_time_ms}{{{{{{}},request="{req}",quantile="0.99"}}}}'
        r = f'{build.M.requests}{{{{{{}},request="{rate_req}",version="9"}}}}'
        c[a] = [case(a, [
            (q.format(B0), f"{thr * 2}x20"), (r.format(B0), "0+600x20"),           # slow and busy: fires
            (q.format(B1), f"{thr * 2}x20"), (r.format(B1), "0+6x20"),             # slow but idle (0.1/s): gated
            (q.format('job="kafka-broker",instance="b2:9404"'), f"{thr // 2}x20"),  # busy and fast: quiet
            (r.format('job="kafka-broker",instance="b2:9404"'), "0+600x20")],
            [("3m", []), ("10m", [expect(a, thr * 2, **I0)])])]
    a = "KafkaPurgatoryGrowing"
    p = build.M.purgatory_size + '{{{},delayedOperation="{}"}}'
    c[a] = [case(a, [(p.format(B0, "Produce"), "600+60x30"),  # > 500 and +1/s
                     (p.format(B0, "Fetch"), "5000x30"),      # large but flat: quiet
                     (p.format(B1, "Produce"), "0+1x30")],    # growing but small: quiet
                 [("5m", []), ("25m", [expect(a, 600 + 60 * 25, **I0, delayedOperation="Produce")])])]
    a = "KafkaRequestHandlerIdleLow"
    c[a] = [case(a, [(f"{build.M.handler_idle_ns}{{{B0}}}", "0+6e9x30"),     # 10% idle
                     (f"{build.M.handler_idle_ns}{{{B1}}}", "0+48e9x30")],   # 80% idle
                 [("8m", []), ("20m", [expect(a, 0.1, **I0)])])]
    a = "KafkaLogDirFreeSpaceLow"
    d = build.M.free_bytes + '{{{},logDir="/data/{}"}}'
    c[a] = [case(a, [(d.format(B0, "a"), f"{100 * 1024 ** 3}x20"), (d.format(B1, "b"), f"{1024 ** 3}x20")],
                 [("3m", []), ("10m", [expect(a, 1024 ** 3, **I1, logDir="/data/b")])])]
    a = "KafkaOfflineLogDirectory"
    c[a] = [case(a, [(f"{build.M.offline_log_dirs}{{{B0}}}", "0x20"),
                     (f"{build.M.offline_log_dirs}{{{B1}}}", "0 0 0 1x20")],
                 [("2m", []), ("3m", []), ("5m", [expect(a, 1, **I1)])])]
    c.update(host_cases())
    g = build.M.burrow_status + '{{cluster="local",consumer_group="{}"}}'
    a = "KafkaConsumerGroupError"
    c[a] = [case(a, [(g.format("ok"), "1x30"), (g.format("warn"), "2x30"), (g.format("err"), "1 1 3x30")],
                 [("4m", []), ("10m", [expect(a, 3, cluster="local", consumer_group="err")])])]
    a = "KafkaConsumerGroupWarning"
    c[a] = [case(a, [(g.format("ok"), "1x30"), (g.format("err"), "3x30"), (g.format("warn"), "1 1 2x30")],
                 [("10m", []), ("20m", [expect(a, 2, cluster="local", consumer_group="warn")])])]
    a = "XMonitorRecordsLost"
    xl = 'cluster="local",topic="xinfra-monitor-topic"'
    c[a] = [case(a, [(f'{build.M.x_lost}{{{xl},partition="0",leader="1"}}', "0x10 4x20"),
                     (f'{build.M.x_lost}{{{xl},partition="1",leader="2"}}', "0x30")],
                 [("5m", []), ("11m", [expect(a, 4 * 5 / 4 * 4 / 5, cluster="local",
                                               topic="xinfra-monitor-topic")]), ("20m", [])])]
    a = "XMonitorDown"
    xu = build.M.x_service_up + '{{job="xmonitor",instance="x:1",cluster="local",service="{}"}}'
    c[a] = [
        case(a, [('up{job="xmonitor",instance="x:1"}', "1x20"), (xu.format("produce"), "1x20"),
                 (xu.format("consume"), "1 1 1 0x20")],
             [("4m", []), ("8m", [expect(a, 0, job="xmonitor", cluster="local", service="consume")])]),
        case(a, [('up{job="xmonitor",instance="x:1"}', "1 1 0x20"), (xu.format("produce"), "1 1")],
             [("3m", []), ("8m", [expect(a, 0, job="xmonitor", instance="x:1")])]),
        case(a, [(f"up{{{B0}}}", "1x10")], [("5m", [expect(a, 1, job="xmonitor")])]),
    ]
    return c


def _fs(instance: str, device: str, fstype: str, mountpoint: str, free: str, readonly: int = 0) -> list:
    """A node exporter filesystem of size 1000 whose available bytes follow `free` (a promtool series)."""
    lbl = f'job="node",instance="{instance}",device="{device}",fstype="{fstype}",mountpoint="{mountpoint}"'
    return [(f"{build.M.node_fs_size}{{{lbl}}}", "1000x20"), (f"{build.M.node_fs_avail}{{{lbl}}}", free),
            (f"{build.M.node_fs_readonly}{{{lbl}}}", f"{readonly}x20")]


def _fs_alert(value: float, instance: str, device: str, fstype: str, mountpoint: str) -> dict:
    return expect("KafkaRunningOutOfSpace", value, job="node", instance=instance, device=device, fstype=fstype,
                  mountpoint=mountpoint)


def host_cases() -> dict[str, list[dict]]:
    """Node exporter alerts. h1 says where its log dirs are (/data; and /ram, a tmpfs), h2 does not."""
    info = build.M.logdir_mount_info + '{{job="node",instance="h1:9100",broker_id="{}",logDir="{}",mountpoint="{}"}}'
    a = "KafkaRunningOutOfSpace"
    c = {a: [case(a, [
        (info.format(1, "/data/kafka", "/data"), "1x20"), (info.format(2, "/ram/kafka", "/ram"), "1x20"),
        *_fs("h1:9100", "/dev/sdb", "xfs", "/data", "500 500 100x20"),   # log dir: 50% -> 10% free: fires
        *_fs("h1:9100", "tmpfs", "tmpfs", "/ram", "50x20"),              # log dir on tmpfs: counts
        *_fs("h1:9100", "/dev/sda1", "ext4", "/", "50x20"),              # no log dir on h1's root: quiet
        *_fs("h2:9100", "/dev/sda1", "ext4", "/", "100x20"),             # h2 declares nothing: every real fs
        *_fs("h2:9100", "/dev/sda2", "ext4", "/var", "500x20"),          # 50%: quiet
        *_fs("h2:9100", "tmpfs", "tmpfs", "/dev/shm", "10x20"),          # pseudo: quiet
        *_fs("h2:9100", "overlay", "overlay", "/var/lib/x/merged", "10x20"),  # pseudo: quiet
        *_fs("h2:9100", "/dev/sr0", "ext4", "/boot", "10x20", readonly=1),   # read-only: quiet
        *_fs("h1:9100", "/dev/sdc", "ext4", "/data", "10x20", readonly=1)],  # read-only, though a log-dir mount
        [("4m", []),                                                     # pending (for: 5m)
         ("6m", [_fs_alert(0.05, "h1:9100", "tmpfs", "tmpfs", "/ram"), _fs_alert(0.1, "h2:9100", "/dev/sda1",
                                                                                  "ext4", "/")]),
         ("8m", [_fs_alert(0.1, "h1:9100", "/dev/sdb", "xfs", "/data"),
                 _fs_alert(0.05, "h1:9100", "tmpfs", "tmpfs", "/ram"),
                 _fs_alert(0.1, "h2:9100", "/dev/sda1", "ext4", "/")])])]}
    a = "NodeDiskIOSaturation"
    w = build.M.node_disk_io_weighted + '{{job="node",instance="h1:9100",device="{}"}}'
    c[a] = [case(a, [(w.format("sda"), "0x5 0+1200x60"),    # 20 I/Os queued from 5m on: fires after 30m
                     (w.format("vda"), "0+120x60"),          # 2 queued: quiet
                     (w.format("loop0"), "0+6000x60")],      # not a disk
                 [("20m", []), ("40m", [expect(a, 20, job="node", instance="h1:9100", device="sda")])])]
    return c


# --- SLO burn rates: series that give an SLO's error ratio r per step, and four scenarios per SLO


def _slo_series(slo: str, ratios: list[float], per_step: float) -> list[tuple[str, str]]:
    """Input series whose SLI error ratio is ratios[i] during step i (counters advance per_step per step)."""
    x = 'cluster="c1",topic="t",partition="0",leader="1"'
    good, bad = [0.0], [0.0]
    for r in ratios:
        good.append(good[-1] + per_step * (1 - r))
        bad.append(bad[-1] + per_step * r)

    def vals(v: list[float]) -> str:
        return " ".join(f"{n:.6g}" for n in v)

    total = [g + b for g, b in zip(good, bad, strict=True)]
    M = build.M
    if slo == "write-availability":
        return [(f"{M.x_attempts}{{{x}}}", vals(total)), (f"{M.x_successes}{{{x}}}", vals(good))]
    if slo == "read-availability":  # late records; no lost series at all (the `or 0` path)
        return [(f"{M.x_consumed}{{{x}}}", vals(total)), (f"{M.x_late}{{{x}}}", vals(bad))]
    if slo == "e2e-latency":
        return [(f"{M.x_e2e_count}{{{x}}}", vals(total)), (f'{M.x_e2e_bucket}{{{x},le="0.5"}}', vals(good)),
                (f'{M.x_e2e_bucket}{{{x},le="+Inf"}}', vals(total))]
    if slo == "no-loss":
        return [(f"{M.x_consumed}{{{x}}}", vals(good)), (f"{M.x_lost}{{{x}}}", vals(bad))]
    if slo == "consumer-lag":  # one group, ERR while bad (ratio steps of 0 or 1 only; r<1 means a share of groups)
        n = 4
        series = []
        for k in range(n):
            st = [3 if (k + 0.5) / n < r else 1 for r in ratios]
            series.append((f'{M.burrow_status}{{cluster="c1",consumer_group="g{k}"}}',
                           " ".join(str(s) for s in [st[0], *st])))
        return series
    raise KeyError(slo)


def burn_cases(slo: str, budget: float) -> list[dict]:
    """Four scenarios; each checks exactly which window pairs of the page/ticket alerts fire."""
    def fast(lw: str, sw: str) -> dict:
        return expect("KafkaSLOErrorBudgetBurnFast", math.nan, cluster="c1", slo=slo, long_window=lw,
                      short_window=sw)

    def slow(lw: str, sw: str) -> dict:
        return expect("KafkaSLOErrorBudgetBurnSlow", math.nan, cluster="c1", slo=slo, long_window=lw,
                      short_window=sw)

    lag = slo == "consumer-lag"
    q = (lambda r: 1.0 if r > 0 else 0.0) if lag else (lambda r: r)
    big = q(min(1.0, 100 * budget))  # 100x budget: an outage for 99% SLOs
    # A: an outage (r=1) for 15m after 6h10m clean, then 15m clean (1m steps).
    ratios = [0.0] * 370 + [big] * 15 + [0.0] * 15
    a = case("KafkaSLOErrorBudgetBurnFast", _slo_series(slo, ratios, 60), [
        ("374m", []),                        # 4 bad minutes: 1h ratio 0.067 < 14.4x
        ("384m", [fast("1h", "5m")]),         # 14 bad minutes: 1h and 5m over 14.4x (6h: 0.039 < 6x)
        ("395m", []),                         # recovered: the 5m window resets the page
    ])
    # B: a slow burn at 12x budget... capped below 14.4x, for 4h, then 35m clean.
    r_b = min(12 * budget, 1.0) if not lag else 0.25
    # consumer-lag: 1 group of 4 ERR = 0.25 (25x its 1% budget): exercises the 1h pair too
    ratios = [0.0] * 370 + [r_b] * 240 + [0.0] * 35
    checks_b = [("520m", [] if not lag else [fast("1h", "5m"), fast("6h", "30m")]),
                ("610m", [fast("6h", "30m")] if not lag else [fast("1h", "5m"), fast("6h", "30m")]),
                ("645m", [])]
    if not lag:
        checks_b[0] = ("520m", [])           # 150 bad minutes: 6h ratio 5x budget < 6x
    b = case("KafkaSLOErrorBudgetBurnFast", _slo_series(slo, ratios, 60), checks_b)
    # C: 1 day clean, then r=0.5 for 165m, then 2h05m clean (5m steps): the 1d/2h ticket, then only 3d/6h.
    r_c = 50 * budget
    ratios = [0.0] * 288 + [r_c] * 33 + [0.0] * 25
    c = case("KafkaSLOErrorBudgetBurnSlow", _slo_series(slo, ratios, 300), [
        ("1440m", []), ("1510m", []),
        ("1605m", [slow("1d", "2h")]),
        ("1730m", [slow("3d", "6h")]),
    ], interval="5m")
    # D: a slow burn at 2x budget for 12h, then 6h10m clean: only the 3d/6h ticket, reset by its 6h window.
    r_d = 2 * budget if not lag else 0.25
    ratios = [r_d] * 144 + [0.0] * 74
    checks_d = [("120m", []), ("720m", [slow("3d", "6h")]), ("1090m", [])]
    if lag:  # 25x budget: the 1d/2h pair fires too while it lasts
        checks_d[0] = ("120m", [slow("1d", "2h")])
        checks_d[1] = ("720m", [slow("1d", "2h"), slow("3d", "6h")])
    d = case("KafkaSLOErrorBudgetBurnSlow", _slo_series(slo, ratios, 300), checks_d, interval="5m")
    return [a, b, c, d]


def _run(tmp_path: Path, name: str, tests: list[dict], rule_filter: str | None = None) -> None:
    files = []
    for f in RULES:
        doc = yaml.safe_load(f.read_text())
        if rule_filter:
            doc["groups"] = [dict(g, rules=[r for r in g["rules"] if _keep(r, rule_filter)]) for g in doc["groups"]]
            doc["groups"] = [g for g in doc["groups"] if g["rules"]]
        out = tmp_path / f.name
        out.write_text(yaml.safe_dump(doc, sort_keys=False))
        files.append(out.name)
    t = tmp_path / f"{name}.test.yml"
    t.write_text(yaml.safe_dump({"rule_files": files, "evaluation_interval": tests[0]["interval"],
                                 "tests": tests}, sort_keys=False, width=10 ** 9))
    r = subprocess.run([PROMTOOL, "test", "rules", t.name], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 0, f"{name}:\n{r.stdout[-6000:]}\n{r.stderr[-3000:]}"


def _keep(rule: dict, slo: str) -> bool:
    labels = rule.get("labels", {})
    if "record" in rule:
        return labels.get("slo") == slo
    return labels.get("slo") == slo


BASIC = basic_cases()


def test_every_alert_has_a_promtool_test():
    # their cases and promtool runs live in their own modules
    from tests.dashboards.test_kraft_rules import KRAFT
    from tests.dashboards.test_security_rules import SECURITY
    from tests.dashboards.test_transaction_rules import A as HANGING_TXN

    burn = {"KafkaSLOErrorBudgetBurnFast", "KafkaSLOErrorBudgetBurnSlow"}
    assert not set(BASIC) & set(SECURITY) and not (set(BASIC) | set(SECURITY)) & set(KRAFT)
    assert set(BASIC) | set(SECURITY) | set(KRAFT) | burn | {HANGING_TXN} == set(build.alert_names())


@needs_promtool
@pytest.mark.parametrize("alert", sorted(BASIC))
def test_alert_fires_and_stays_quiet(tmp_path, alert):
    _run(tmp_path, alert, BASIC[alert])


@needs_promtool
@pytest.mark.parametrize("slo", [s.name for s in build.slos()])
def test_slo_burn_rate_window_pairs(tmp_path, slo):
    spec = {s.name: s for s in build.slos()}[slo]
    tests = burn_cases(slo, 1 - spec.target)
    for t in tests:  # the burn descriptions carry the long-window ratio: compare labels and the summary only
        for check in t["alert_rule_test"]:
            for exp in check["exp_alerts"]:
                exp["exp_annotations"].pop("description")
    _run_burn(tmp_path, slo, tests)


def _run_burn(tmp_path: Path, slo: str, tests: list[dict]) -> None:
    """Like _run, with the descriptions of the burn alerts replaced by a constant (their text is checked by
    test_burn_alert_description), since they print the measured ratio."""
    files = []
    for f in RULES:
        doc = yaml.safe_load(f.read_text())
        groups = []
        for g in doc["groups"]:
            rules = [dict(r) for r in g["rules"] if _keep(r, slo)]
            for r in rules:
                if "alert" in r:
                    r["annotations"] = {k: v for k, v in r["annotations"].items() if k != "description"}
            if rules:
                groups.append(dict(g, rules=rules))
        doc["groups"] = groups
        (tmp_path / f.name).write_text(yaml.safe_dump(doc, sort_keys=False))
        files.append(f.name)
    by_interval: dict[str, list[dict]] = {}
    for t in tests:
        by_interval.setdefault(t["interval"], []).append(t)
    for interval, ts in by_interval.items():
        name = f"{slo}-{interval}"
        (tmp_path / f"{name}.test.yml").write_text(yaml.safe_dump(
            {"rule_files": files, "evaluation_interval": interval, "tests": ts}, sort_keys=False, width=10 ** 9))
        r = subprocess.run([PROMTOOL, "test", "rules", f"{name}.test.yml"], capture_output=True, text=True,
                           timeout=180, cwd=tmp_path)
        assert r.returncode == 0, f"{name}:\n{r.stdout[-8000:]}\n{r.stderr[-3000:]}"


def test_burn_alert_description():
    rule = _rule("KafkaSLOErrorBudgetBurnFast", {"slo": "write-availability", "long_window": "1h",
                                                  "short_window": "5m", "severity": "page"})
    text = render(rule["annotations"]["description"], rule["labels"], 0.25)
    assert "14.4x" in text and "25%" in text and "0.144" in text and "0.972 days" in text
