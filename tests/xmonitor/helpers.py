"""Running xmonitor in-process against real brokers, with test-sized intervals."""

from __future__ import annotations

import urllib.request
import uuid

from prometheus_client.parser import text_string_to_metric_families

from xmonitor.app import XMonitor
from xmonitor.config import MonitorConfig


def fast_config(bootstrap: str, tmp_path, **overrides) -> MonitorConfig:
    base = dict(bootstrap_servers=bootstrap, topic=f"xm-{uuid.uuid4().hex[:8]}", cluster_name="test",
                produce_record_delay_ms=40, sli_interval_ms=1000, sli_dir=str(tmp_path / "sli"),
                consume_loss_grace_ms=1000, metadata_refresh_interval_ms=1000, offset_commit_interval_ms=500,
                consume_commit_interval_ms=1000, prometheus_listener="127.0.0.1:0", produce_request_timeout_ms=3000)
    base.update(overrides)
    return MonitorConfig(**base).validate()


def scrape(monitor: XMonitor) -> dict[str, list]:
    """name -> [(labels, value)] from the live /metrics endpoint."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{monitor.port}/metrics", timeout=5).read().decode()
    out: dict[str, list] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def total(samples: dict[str, list], name: str, **match) -> float:
    return sum(v for labels, v in samples.get(name, []) if all(labels.get(k) == str(x) for k, x in match.items()))


def gauge(monitor: XMonitor, typ: str, attr: str) -> float:
    return monitor.rec.kmf_gauges()[(typ, attr)]


def registry_total(monitor: XMonitor, name: str) -> float:
    """Sum of one sample name over the monitor's registry (what /metrics serves; readable after stop)."""
    return sum(s.value for f in monitor.rec.registry.collect() for s in f.samples if s.name == name)
