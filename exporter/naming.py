"""JMX → Prometheus naming with jmx_exporter semantics: a pure function of (MBean name, attribute, convention).

Two conventions (see ../shared/reference/kafka_metrics.md §2):

* ``strimzi``: Strimzi's ``kafka-metrics.yaml`` (jmx_exporter 1.x exposition), plus the kafka-2_0_0 rule for the
  dotted ``kafka.coordinator.<x>`` domains (Strimzi's ``kafka.(\\w+)<`` cannot match them, so Strimzi exports no
  GroupMetadataManager series; we keep 2_0_0's names rather than drop them).
* ``confluent``: ``jmx-monitoring-stacks`` ``kafka_broker.yml``: untyped, raw cumulative ``Count`` under the MBean
  name (``PerSec`` kept), label names lowercased.

jmx_exporter behaviour reproduced: the metric name is ``kafka_<domain>_<type>_<name>`` made safe (any character
outside ``[a-zA-Z0-9:_]`` becomes ``_``, runs of ``_`` collapse) and lowercased; label names keep MBean case
(Strimzi) or are lowercased (Confluent); label values are verbatim. Percentile attributes become gauges with a
``quantile`` label ``0.50 0.75 0.95 0.98 0.99 0.999`` (those exact strings). Counters are named here *without* the
exposition suffix: the renderer appends ``_total`` to COUNTERs (as client_java 1.x and prometheus_client do), so a
Strimzi PerSec meter named ``..._messagesin`` is exposed as ``..._messagesin_total`` and a histogram ``Count`` as
``..._count_total`` (jmx_exporter 1.x, what Strimzi runs today).

Attributes are Yammer's: ``Value`` (gauges), ``Count``/``MeanRate``/``OneMinuteRate``/``FiveMinuteRate``/
``FifteenMinuteRate`` (meters), ``Count`` and ``50thPercentile``..``999thPercentile`` (histograms/timers). For
``common.metrics``-style MBeans (no ``name=``), the attribute is the metric (``connection-count``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STRIMZI, CONFLUENT = "strimzi", "confluent"
CONVENTIONS = (STRIMZI, CONFLUENT)
PERCENTILE_ATTRS = ("50thPercentile", "75thPercentile", "95thPercentile", "98thPercentile", "99thPercentile",
                    "999thPercentile")
_UNSAFE = re.compile(r"[^a-zA-Z0-9:_]")
_UNDERSCORES = re.compile(r"__+")
_PERCENTILE = re.compile(r"^(\d+)thPercentile$")


@dataclass(frozen=True)
class Series:
    name: str                       # without exposition suffix (renderer adds _total to counters)
    labels: tuple[tuple[str, str], ...]
    type: str                       # "gauge" | "counter" | "untyped"


def safe_name(s: str) -> str:
    """jmx_exporter's safeName: illegal characters → ``_``, repeated ``_`` collapsed."""
    return _UNDERSCORES.sub("_", _UNSAFE.sub("_", s))


def quantile_label(attribute: str) -> str | None:
    """``99thPercentile`` → ``0.99``, ``999thPercentile`` → ``0.999``, ``50thPercentile`` → ``0.50``."""
    m = _PERCENTILE.match(attribute)
    return f"0.{m.group(1)}" if m else None


def _base(domain: str, type_: str) -> str | None:
    """``kafka.server``/``ReplicaManager`` → ``kafka_server_replicamanager``; None for non-kafka domains."""
    parts = domain.split(".")
    if parts[0] != "kafka" or len(parts) < 2:
        return None
    return "_".join(parts) + "_" + type_


def _out(name: str, labels: list[tuple[str, str]], type_: str, lower_labels: bool) -> Series:
    if lower_labels:
        labels = [(k.lower(), v) for k, v in labels]
    return Series(safe_name(name).lower(), tuple((safe_name(k), v) for k, v in labels), type_)


def _strimzi(domain: str, type_: str, name: str | None, tags: tuple, attr: str) -> Series | None:
    base = _base(domain, type_)
    if base is None:
        return None
    dotted = domain.count(".") > 1
    tag_labels = list(tags)
    if name is None:  # common.metrics style (rule 4 of kafka-metrics.yaml), kafka.server only
        if domain != "kafka.server":
            return None
        return _out(f"{base}_{attr}", tag_labels, "counter" if attr.endswith("-total") else "gauge", False)
    if dotted:
        # kafka-2_0_0: kafka.coordinator.(\w+)<type=(.+), name=(.+)><>Value, no extra keys.
        if domain.startswith("kafka.coordinator.") and attr == "Value" and not tags:
            return _out(f"{base}_{name}", [], "gauge", False)
        return None
    if len(tags) > 2:
        # Only rule 1 (clientId, topic, partition in kafka.server) takes three keys.
        keys = tuple(k for k, _ in tags)
        if not (domain == "kafka.server" and keys == ("clientId", "topic", "partition") and attr == "Value"):
            return None
        return _out(f"{base}_{name}", tag_labels, "gauge", False)
    # Rule 5: percent gauges/meters, before the generic rules.
    if "Percent" in name:
        stem = name[: name.index("Percent")]
        if attr == "MeanRate" and not tags:
            return _out(f"{base}_{stem}_percent", [], "gauge", False)
        if attr == "Value" and len(tags) <= 1:
            return _out(f"{base}_{stem}_percent", tag_labels, "gauge", False)
    # Rule 6: PerSec meters' Count → counter without PerSec.
    if "PerSec" in name and attr == "Count":
        return _out(f"{base}_{name[: name.index('PerSec')]}", tag_labels, "counter", False)
    # Rule 7: generic gauges.
    if attr == "Value":
        return _out(f"{base}_{name}", tag_labels, "gauge", False)
    # Rule 8: histogram/timer Count and percentiles.
    if attr == "Count":
        return _out(f"{base}_{name}_count", tag_labels, "counter", False)
    q = quantile_label(attr)
    if q is not None:
        return _out(f"{base}_{name}", [*tag_labels, ("quantile", q)], "gauge", False)
    return None  # Min/Max/Mean/StdDev and the meters' *Rate attributes are not exported


def _confluent(domain: str, type_: str, name: str | None, tags: tuple, attr: str) -> Series | None:
    base = _base(domain, type_)
    if base is None:
        return None
    tag_labels = list(tags)
    if name is None:
        if domain == "kafka.server" and type_ == "socket-server-metrics":
            # kafka_broker.yml names the label network_processor explicitly.
            tag_labels = [("network_processor" if k == "networkProcessor" else k, v) for k, v in tags]
            return _out(f"kafka_server_socketservermetrics_{attr}", tag_labels, "untyped", True)
        return _out(f"{base}_{attr}", tag_labels, "untyped", True)
    if name == "RequestHandlerAvgIdlePercent":
        if attr == "OneMinuteRate":
            return _out(f"{base}_{name}_oneminuterate", [], "untyped", True)
        if attr == "Count":
            return _out(f"{base}_{name}", [], "untyped", True)
        return None
    if type_ == "BrokerTopicMetrics" and attr in ("OneMinuteRate", "FiveMinuteRate", "FifteenMinuteRate"):
        suffix = attr.lower() + ("" if tags else "_alltopics")
        return _out(f"{base}_{name}_{suffix}", tag_labels, "untyped", True)
    if len(tags) > 4:
        return None
    if attr in ("Count", "Value"):
        return _out(f"{base}_{name}", tag_labels, "untyped", True)
    q = quantile_label(attr)
    if q is not None:
        return _out(f"{base}_{name}", [*tag_labels, ("quantile", q)], "untyped", True)
    return None


def _own(domain: str, type_: str, name: str | None, tags: tuple, attr: str, convention: str) -> Series | None:
    """Our own (non-Kafka) MBeans, e.g. ``kafkascope.log:type=LogDir,name=FreeBytes``: generic 2_0_0-style rules."""
    base = f"{domain.replace('.', '_')}_{type_}"
    lower = convention == CONFLUENT
    if name is None:
        return _out(f"{base}_{attr}", list(tags), "counter" if attr.endswith("-total") else "gauge", lower)
    if attr == "Value":
        return _out(f"{base}_{name}", list(tags), "gauge", lower)
    if attr == "Count":
        stem = name[: name.index("PerSec")] if "PerSec" in name else f"{name}_count"
        return _out(f"{base}_{stem}", list(tags), "counter", lower)
    q = quantile_label(attr)
    if q is not None:
        return _out(f"{base}_{name}", [*tags, ("quantile", q)], "gauge", lower)
    return None


def series_for(domain: str, type_: str, name: str | None, tags: tuple[tuple[str, str], ...], attribute: str,
               convention: str = STRIMZI) -> Series | None:
    """The Prometheus series one (MBean, attribute) becomes, or None when the rule set exports nothing for it."""
    if not domain.startswith("kafka."):
        return _own(domain, type_, name, tags, attribute, convention)
    if convention == STRIMZI:
        return _strimzi(domain, type_, name, tags, attribute)
    if convention == CONFLUENT:
        return _confluent(domain, type_, name, tags, attribute)
    raise ValueError(f"unknown naming convention {convention!r} (expected one of {CONVENTIONS})")


def histogram_name(domain: str, type_: str, name: str) -> str:
    """The Prometheus classic-histogram family for a ``*Ms`` timer: ``..._totaltime_seconds`` (ours, not JMX's)."""
    stem = name[:-2] if name.endswith("Ms") else name
    return safe_name(f"{_base(domain, type_) or domain.replace('.', '_') + '_' + type_}_{stem}_seconds").lower()
