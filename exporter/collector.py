"""Render a :class:`exporter.registry.Registry` through prometheus-client's custom-collector API.

The registry is read as the MBeans Kafka would register (:func:`mbeans`: object names, Yammer/common.metrics
attribute names and values) and named by the ``prometheus.naming`` rule file with jmx_exporter's semantics
(:mod:`exporter.naming`, :mod:`exporter.jmx_engine`). Each timer that has recorded anything is also exported as a
classic Prometheus histogram (``..._seconds_bucket{le=...}``, ``_sum``, ``_count``; cumulative since start, ours
rather than JMX's) so latency can be aggregated across brokers and SLO thresholds read exactly at a bucket bound.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

from prometheus_client.core import CollectorRegistry, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.process_collector import ProcessCollector

from exporter import naming
from exporter.jmx_config import JmxConfig
from exporter.jmx_engine import Family, JmxEngine, Props, Sample
from exporter.registry import GaugeFamily, KafkaMetric, Meter, MetricName, Registry
from exporter.timer import Timer

log = logging.getLogger(__name__)

METER_ATTRS = ("Count", "MeanRate", "OneMinuteRate", "FiveMinuteRate", "FifteenMinuteRate")
HISTOGRAM_ATTRS = ("Count", "Min", "Max", "Mean", "StdDev", *naming.PERCENTILE_ATTRS)
COMMON = "common.metrics"
_PLAIN_VALUE = re.compile(r"[\w\-%. \t]*")  # Kafka's Sanitizer.jmxSanitize leaves these unquoted


def jmx_sanitize(value: str) -> str:
    """Kafka's ``Sanitizer.jmxSanitize``: a tag value ObjectName cannot hold as is is quoted (ObjectName.quote)."""
    if _PLAIN_VALUE.fullmatch(value):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("*", "\\*").replace("?", "\\?") \
        .replace("\n", "\\n")
    return f'"{escaped}"'


def _props(type_: str, name: str | None, tags: tuple) -> Props:
    head = (("type", type_),) if name is None else (("type", type_), ("name", name))
    return head + tuple((k, jmx_sanitize(v)) for k, v in tags)


def _meter_values(m: Meter) -> tuple[float, ...]:
    return (m.count, m.mean_rate, m.one_minute_rate, m.five_minute_rate, m.fifteen_minute_rate)


def _gauge_value(v: object) -> object:
    return int(v) if v.__class__ is bool else v  # ours are numbers; Kafka's gauges have no Boolean values


def mbeans(reg: Registry) -> Iterator[tuple[tuple, MetricName, tuple, str, object]]:
    """Every MBean attribute the registry stands for: (cache key, metric name, tags, attribute, value).

    Yammer gauges have ``Value``; meters ``Count`` and the rates; histograms ``Count``, ``Min``, ``Max``,
    ``Mean``, ``StdDev`` and the percentiles; timers both; common.metrics MBeans (cache key ``(m, COMMON)``) one
    attribute per metric (dashed names, Double values). Values are ints where Java's are longs, else floats.
    """
    for mn, m in reg.items():
        kind = m.kind  # type: ignore[attr-defined]
        if kind == "gauge":
            try:
                v = _gauge_value(m.value)  # type: ignore[attr-defined]
            except Exception:  # a gauge must never break the scrape
                continue
            yield (m, 0), mn, mn.tags, "Value", v
        elif kind == "meter":
            for i, (attr, v) in enumerate(zip(METER_ATTRS, _meter_values(m), strict=True)):  # type: ignore[arg-type]
                yield (m, i), mn, mn.tags, attr, v
        elif kind == "timer":
            yield from _timer_attrs(mn, m)  # type: ignore[arg-type]
        elif kind == "gauge_family":
            f: GaugeFamily = m  # type: ignore[assignment]
            try:
                rows = list(f.fn())
            except Exception:
                continue
            for tags, v in rows:
                yield (m, tags), mn, tags, "Value", _gauge_value(v)
        elif kind == "kafka_metric":
            km: KafkaMetric = m  # type: ignore[assignment]
            try:
                v = float(km.read())
            except Exception:
                continue
            yield (m, COMMON), mn, mn.tags, mn.name, v


def bean(key: tuple, mn: MetricName, tags: tuple) -> tuple[str, Props]:
    """The (domain, key properties) of the MBean an :func:`mbeans` row belongs to."""
    return mn.domain, _props(mn.type, None if key[1] is COMMON else mn.name, tags)


def mbean_list(reg: Registry) -> list[tuple[str, Props, str, object]]:
    """(domain, key properties, attribute, value) of every MBean attribute, e.g. to feed the real jmx_exporter."""
    reg.tick()
    return [(*bean(key, mn, tags), attr, v) for key, mn, tags, attr, v in mbeans(reg)]


def _timer_attrs(mn: MetricName, t: Timer) -> Iterator[tuple[tuple, MetricName, tuple, str, object]]:
    values = (t.count, *t.moments(), *t.quantiles())
    for i, (attr, v) in enumerate(zip(HISTOGRAM_ATTRS, values, strict=True)):
        yield (t, i), mn, mn.tags, attr, v
    if t.meter is not None:
        for i, (attr, v) in enumerate(zip(METER_ATTRS[1:], _meter_values(t.meter)[1:], strict=True)):
            yield (t, 100 + i), mn, mn.tags, attr, v


def family_metrics(families: list[Family]) -> Iterator[Metric]:
    """prometheus-client metrics of jmx_exporter families: a COUNTER ``x`` is exposed as ``x_total``."""
    for fam in families:
        metric = Metric(fam.name, fam.help, fam.type)
        sample_name = fam.name + "_total" if fam.type == "counter" else fam.name
        for labels, v in fam.points:
            metric.add_sample(sample_name, labels, v)
        yield metric


def _fmt_le(le: float) -> str:
    return "+Inf" if le == float("inf") else repr(float(le))


_UNSETTLED = object()


class RegistryCollector:
    """A prometheus-client collector over our registry (``collect()`` only; register with auto_describe off)."""

    def __init__(self, registry: Registry, naming_spec: str = naming.STRIMZI, config: JmxConfig | None = None) -> None:
        self.registry = registry
        self.naming = naming_spec
        self.config = config if config is not None else naming.load(naming_spec)
        self.engine = JmxEngine(self.config)
        self.own = JmxEngine(JmxConfig.load(naming.OWN_RULES))
        self._samples: dict[tuple, Sample | None] = {}  # settled outcomes by cache key

    def _sample(self, key: tuple, mn: MetricName, tags: tuple, attr: str, value: object) -> Sample | None:
        domain, props = bean(key, mn, tags)
        e = self.engine
        if e.bean_exported(domain, props) and not e.attribute_excluded(domain, props, attr):
            s, settled = e.match_settled(domain, props, attr, value)
        else:
            s, settled = None, True
        if s is None and not naming.is_kafka_domain(domain):
            s, own_settled = self.own.match_settled(domain, props, attr, value)
            settled = settled and own_settled
        if settled:
            self._samples[key] = s
        return s

    def collect(self) -> Iterator[Metric]:
        reg = self.registry
        reg.tick()
        matched: list[tuple[Sample, object]] = []
        cache = self._samples
        for key, mn, tags, attr, value in mbeans(reg):
            s = cache.get(key, _UNSETTLED)
            if s is _UNSETTLED:
                s = self._sample(key, mn, tags, attr, value)
            if s is not None:
                matched.append((s, value))  # type: ignore[arg-type]
        if len(cache) > 2 * len(matched) + 10_000:  # MBeans came and went: start afresh rather than grow
            cache.clear()
            self.engine.forget()
            self.own.forget()
        yield from family_metrics(JmxEngine.families(matched))
        yield from self._histograms()
        for raw in reg.raw_families():
            fam = Metric(raw.name, raw.help, raw.type)
            for s in raw.samples:
                fam.add_sample(raw.name + s.suffix, s.labels, float(s.value))
            yield fam

    def _histograms(self) -> Iterator[Metric]:
        lower = self.config.lowercase_output_label_names
        for mn, m in self.registry.items():
            t = m
            if getattr(t, "kind", "") != "timer" or not t.count:  # type: ignore[attr-defined]
                continue
            name = naming.histogram_name(mn.domain, mn.type, mn.name)
            labels = {(k.lower() if lower else k): v for k, v in mn.tags}
            fam = Metric(name, f"{mn.mbean} as a classic histogram (seconds, cumulative)", "histogram")
            for le, c in t.buckets():  # type: ignore[attr-defined]
                fam.add_sample(name + "_bucket", {**labels, "le": _fmt_le(le)}, float(c))
            fam.add_sample(name + "_count", labels, float(t.count))  # type: ignore[attr-defined]
            fam.add_sample(name + "_sum", labels, t.sum_ms / 1000.0)  # type: ignore[attr-defined]
            yield fam


def build_prometheus_registry(registry: Registry, naming_spec: str = naming.STRIMZI,
                              process: bool = True) -> CollectorRegistry:
    """A prometheus-client registry rendering ours (and, on Linux, ``process_*`` from /proc).

    `naming_spec` is a ``prometheus.naming`` value: ``strimzi``, ``confluent`` or ``rules:/path/to/file.yml``.
    """
    prom = CollectorRegistry(auto_describe=False)
    prom.register(RegistryCollector(registry, naming_spec))
    if process:
        ProcessCollector(registry=prom)
    return prom


def render(prom: CollectorRegistry) -> bytes:
    """The Prometheus text exposition (format 0.0.4)."""
    return generate_latest(prom)
