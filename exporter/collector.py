"""Render a :class:`exporter.registry.Registry` through prometheus-client's custom-collector API.

Every (MBean, attribute) goes through :mod:`exporter.naming`; series with the same Prometheus name form one family.
Each timer that has recorded anything is also exported as a classic Prometheus histogram
(``..._seconds_bucket{le=...}``, ``_sum``, ``_count``; cumulative since start) so latency can be aggregated across
brokers and SLO thresholds read exactly at a bucket bound.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CollectorRegistry, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.process_collector import ProcessCollector

from exporter import naming
from exporter.registry import GaugeFamily, KafkaMetric, Meter, MetricName, Registry
from exporter.timer import Timer

_METER_ATTRS = ("Count", "MeanRate", "OneMinuteRate", "FiveMinuteRate", "FifteenMinuteRate")
_TYPE = {"gauge": "gauge", "counter": "counter", "untyped": "unknown"}


def _meter_values(m: Meter) -> tuple[float, ...]:
    return (m.count, m.mean_rate, m.one_minute_rate, m.five_minute_rate, m.fifteen_minute_rate)


def _fmt_le(le: float) -> str:
    return "+Inf" if le == float("inf") else repr(float(le))


class RegistryCollector:
    """A prometheus-client collector over our registry (``collect()`` only; register with auto_describe off)."""

    def __init__(self, registry: Registry, convention: str = naming.STRIMZI) -> None:
        if convention not in naming.CONVENTIONS:
            raise ValueError(f"unknown prometheus.naming {convention!r}")
        self.registry = registry
        self.convention = convention
        self._names: dict[tuple, naming.Series | None] = {}

    def _series(self, mn: MetricName, name: str | None, tags: tuple, attr: str) -> naming.Series | None:
        key = (mn.domain, mn.type, name, tags, attr)
        try:
            return self._names[key]
        except KeyError:
            s = self._names[key] = naming.series_for(mn.domain, mn.type, name, tags, attr, self.convention)
            return s

    def collect(self) -> Iterator[Metric]:
        reg = self.registry
        reg.tick()
        families: dict[str, Metric] = {}
        histograms: list[Metric] = []

        def add(s: naming.Series | None, value: float, help_: str) -> None:
            if s is None:
                return
            name = s.name
            if s.type == "counter" and name.endswith("_total"):
                name = name[:-6]  # the exposition adds it back, as client_java 1.x / prometheus-client do
            fam = families.get(name)
            if fam is None:
                fam = families[name] = Metric(name, help_, _TYPE[s.type])
            sample = name + "_total" if s.type == "counter" else name
            fam.add_sample(sample, dict(s.labels), float(value))

        for mn, m in reg.items():
            kind = m.kind  # type: ignore[attr-defined]
            if kind == "gauge":
                try:
                    v = m.value  # type: ignore[attr-defined]
                except Exception:  # a gauge must never break the scrape
                    continue
                add(self._series(mn, mn.name, mn.tags, "Value"), v, mn.mbean)
            elif kind == "meter":
                for attr, v in zip(_METER_ATTRS, _meter_values(m), strict=True):  # type: ignore[arg-type]
                    add(self._series(mn, mn.name, mn.tags, attr), v, mn.mbean)
            elif kind == "timer":
                t: Timer = m  # type: ignore[assignment]
                add(self._series(mn, mn.name, mn.tags, "Count"), t.count, mn.mbean)
                for attr, v in zip(naming.PERCENTILE_ATTRS, t.quantiles(), strict=True):
                    add(self._series(mn, mn.name, mn.tags, attr), v, mn.mbean)
                if t.count:
                    histograms.append(self._histogram(mn, t))
            elif kind == "gauge_family":
                f: GaugeFamily = m  # type: ignore[assignment]
                try:
                    rows = list(f.fn())
                except Exception:
                    continue
                for tags, v in rows:
                    add(self._series(mn, mn.name, tags, "Value"), v, mn.mbean)
            elif kind == "kafka_metric":
                km: KafkaMetric = m  # type: ignore[assignment]
                add(self._series(mn, None, mn.tags, mn.name), km.read(), f"{mn.domain}:type={mn.type} {mn.name}")
        yield from families.values()
        yield from histograms
        for raw in reg.raw_families():
            fam = Metric(raw.name, raw.help, raw.type)
            for s in raw.samples:
                fam.add_sample(raw.name + s.suffix, s.labels, float(s.value))
            yield fam

    def _histogram(self, mn: MetricName, t: Timer) -> Metric:
        name = naming.histogram_name(mn.domain, mn.type, mn.name)
        labels = {(k.lower() if self.convention == naming.CONFLUENT else k): v for k, v in mn.tags}
        fam = Metric(name, f"{mn.mbean} as a classic histogram (seconds, cumulative)", "histogram")
        for le, c in t.buckets():
            fam.add_sample(name + "_bucket", {**labels, "le": _fmt_le(le)}, float(c))
        fam.add_sample(name + "_count", labels, float(t.count))
        fam.add_sample(name + "_sum", labels, t.sum_ms / 1000.0)
        return fam


def build_prometheus_registry(registry: Registry, convention: str = naming.STRIMZI,
                              process: bool = True) -> CollectorRegistry:
    """A prometheus-client registry rendering ours (and, on Linux, ``process_*`` from /proc)."""
    prom = CollectorRegistry(auto_describe=False)
    prom.register(RegistryCollector(registry, convention))
    if process:
        ProcessCollector(registry=prom)
    return prom


def render(prom: CollectorRegistry) -> bytes:
    """The Prometheus text exposition (format 0.0.4)."""
    return generate_latest(prom)
