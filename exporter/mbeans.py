"""Our registry read as the MBeans Kafka registers: object names, attribute names and attribute values.

A :class:`exporter.registry.MetricName` ``(domain, type, name, tags)`` is Kafka's KafkaMetricsGroup name
``domain:type=T,name=N,tag1=v1,...`` (tags in their order, values quoted as Kafka's ``Sanitizer.jmxSanitize``
does). Attributes are Yammer 2.2's: a Gauge has ``Value``; a Meter ``Count``, ``MeanRate``, ``OneMinuteRate``,
``FiveMinuteRate``, ``FifteenMinuteRate``; a Histogram ``Count``, ``Min``, ``Max``, ``Mean``, ``StdDev`` and
``50thPercentile`` .. ``999thPercentile``; a Timer both. A common.metrics MBean (``type=socket-server-metrics``,
no ``name``) has one attribute per metric with Kafka's dashed name and a Double value. Values are ints where Java's
are longs and floats where they are doubles, which is what jmx_exporter's match string prints. The string-valued
attributes (``EventType``, ``RateUnit``, ``LatencyUnit``) are left out: no numeric sample comes from them unless a
rule gives a ``value``, and ours do not know Kafka's event type names.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from operator import attrgetter

from exporter.naming import PERCENTILE_ATTRS
from exporter.registry import MetricName, Registry

Props = tuple[tuple[str, str], ...]
Getter = Callable[[object], object]
_PLAIN_VALUE = re.compile(r"[\w\-%. \t]*")  # Kafka's Sanitizer.jmxSanitize leaves these unquoted


@functools.lru_cache(maxsize=100_000)  # tag values repeat: a topic's name per partition, partition numbers per topic
def jmx_sanitize(value: str) -> str:
    """Kafka's ``Sanitizer.jmxSanitize``: a tag value ObjectName cannot hold as is is quoted (ObjectName.quote)."""
    if _PLAIN_VALUE.fullmatch(value):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("*", "\\*").replace("?", "\\?") \
        .replace("\n", "\\n")
    return f'"{escaped}"'


def props(type_: str, name: str | None, tags: tuple) -> Props:
    """Key properties of ``domain:type=T[,name=N],tags...`` (no ``name`` for common.metrics MBeans)."""
    head = (("type", type_),) if name is None else (("type", type_), ("name", name))
    return head + tuple((k, jmx_sanitize(v)) for k, v in tags)


def _gauge_value(g: object) -> object:
    v = g.value  # type: ignore[attr-defined]
    return int(v) if v.__class__ is bool else v  # Kafka's gauges have no Boolean values


def _moment(i: int) -> Getter:
    return lambda t: t.moments()[i]  # type: ignore[attr-defined]


def _quantile(i: int) -> Getter:
    return lambda t: t.quantiles()[i]  # type: ignore[attr-defined]


def _of_meter(get: Getter) -> Getter:
    return lambda t: get(t.meter)  # type: ignore[attr-defined]


GAUGE: tuple[tuple[str, Getter], ...] = (("Value", _gauge_value),)
METER: tuple[tuple[str, Getter], ...] = (
    ("Count", attrgetter("count")), ("MeanRate", attrgetter("mean_rate")),
    ("OneMinuteRate", attrgetter("one_minute_rate")), ("FiveMinuteRate", attrgetter("five_minute_rate")),
    ("FifteenMinuteRate", attrgetter("fifteen_minute_rate")))
HISTOGRAM: tuple[tuple[str, Getter], ...] = (
    ("Count", attrgetter("count")), ("Min", _moment(0)), ("Max", _moment(1)), ("Mean", _moment(2)),
    ("StdDev", _moment(3)), *((p, _quantile(i)) for i, p in enumerate(PERCENTILE_ATTRS)))
TIMER: tuple[tuple[str, Getter], ...] = HISTOGRAM + tuple((a, _of_meter(g)) for a, g in METER[1:])


def attributes(m: object) -> tuple[tuple[str, Getter], ...]:
    """The attributes of a gauge, meter or timer/histogram of the registry."""
    kind = m.kind  # type: ignore[attr-defined]
    if kind == "gauge":
        return GAUGE
    if kind == "meter":
        return METER
    return TIMER if m.meter is not None else HISTOGRAM  # type: ignore[attr-defined]


def mbeans(reg: Registry) -> Iterator[tuple[str, Props, str, object]]:
    """Every MBean attribute the registry stands for: (domain, key properties, attribute, value)."""
    reg.tick()
    for mn, m in reg.items():
        kind = m.kind  # type: ignore[attr-defined]
        if kind == "gauge_family":
            try:
                rows = list(m.fn())  # type: ignore[attr-defined]
            except Exception:
                continue
            for tags, v in rows:
                yield mn.domain, props(mn.type, mn.name, tags), "Value", int(v) if v.__class__ is bool else v
        elif kind == "kafka_metric":
            try:
                v = float(m.read())  # type: ignore[attr-defined]
            except Exception:
                continue
            yield mn.domain, props(mn.type, None, mn.tags), mn.name, v
        else:
            p = props(mn.type, mn.name, mn.tags)
            for attr, get in attributes(m):
                try:
                    yield mn.domain, p, attr, get(m)
                except Exception:
                    continue


def object_name(mn: MetricName) -> str:
    return mn.domain + ":" + ",".join(f"{k}={v}" for k, v in props(mn.type, mn.name, mn.tags))
