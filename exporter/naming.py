"""Which jmx_exporter rule file names the broker's MBeans (the ``prometheus.naming`` broker key).

``prometheus.naming`` is ``rules:/path/to/file.yml`` (any jmx_exporter configuration: Strimzi's, Confluent's
jmx-monitoring-stacks', jmx_exporter's examples, a dashboard project's, your own) or one of the aliases for the
files shipped in ``exporter/rules/``: ``strimzi`` (default; Strimzi's ``kafka-metrics.yaml``) and ``confluent``
(jmx-monitoring-stacks' ``kafka_broker.yml``). The file is applied by :mod:`exporter.jmx_engine` exactly as
jmx_exporter 1.0.1 applies it to Kafka's MBeans. Our own MBeans (``kafkascope.*`` domains) that the file leaves
out are named by ``exporter/rules/kafkascope.yaml``.

Also here: the names of what is ours rather than JMX's (the classic ``..._seconds`` histograms) and a
per-attribute helper, :func:`series_for`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from exporter.jmx_config import JmxConfig, JmxConfigError
from exporter.jmx_engine import JmxEngine, safe_name

RULES_DIR = Path(__file__).with_name("rules")
STRIMZI, CONFLUENT = "strimzi", "confluent"
ALIASES = {STRIMZI: RULES_DIR / "strimzi-kafka-metrics.yaml", CONFLUENT: RULES_DIR / "confluent-kafka_broker.yml"}
OWN_RULES = RULES_DIR / "kafkascope.yaml"
CONVENTIONS = tuple(ALIASES)
PERCENTILE_ATTRS = ("50thPercentile", "75thPercentile", "95thPercentile", "98thPercentile", "99thPercentile",
                    "999thPercentile")
_PERCENTILE = re.compile(r"^(\d+)thPercentile$")

__all__ = ["ALIASES", "CONFLUENT", "OWN_RULES", "PERCENTILE_ATTRS", "STRIMZI", "Series", "histogram_name",
           "is_kafka_domain", "load", "quantile_label", "rules_path", "safe_name", "series_for"]


def rules_path(spec: str) -> Path:
    """The rule file a ``prometheus.naming`` value names; ValueError for anything else."""
    s = spec.strip()
    if s in ALIASES:
        return ALIASES[s]
    if s.startswith("rules:") and s[len("rules:"):].strip():
        return Path(s[len("rules:"):].strip()).expanduser()
    raise ValueError(f"expected {', '.join(ALIASES)} or rules:/path/to/jmx_exporter.yml, got {spec!r}")


def load(spec: str) -> JmxConfig:
    """The parsed rule file of a ``prometheus.naming`` value (JmxConfigError / ValueError when unusable)."""
    path = rules_path(spec)
    try:
        mtime = path.stat().st_mtime_ns
    except OSError as e:
        raise JmxConfigError(f"cannot read {path}: {e.strerror}") from None
    return _load(str(path), mtime)


@functools.lru_cache(maxsize=16)
def _load(path: str, mtime: int) -> JmxConfig:  # mtime: a changed file is read again
    return JmxConfig.load(path)


def is_kafka_domain(domain: str) -> bool:
    return domain == "kafka" or domain.startswith("kafka.")


def quantile_label(attribute: str) -> str | None:
    """``99thPercentile`` → ``0.99``, ``999thPercentile`` → ``0.999``, ``50thPercentile`` → ``0.50``."""
    m = _PERCENTILE.match(attribute)
    return f"0.{m.group(1)}" if m else None


def histogram_name(domain: str, type_: str, name: str) -> str:
    """The Prometheus classic-histogram family for a ``*Ms`` timer: ``..._totaltime_seconds`` (ours, not JMX's)."""
    stem = name[:-2] if name.endswith("Ms") else name
    return safe_name(f"{domain.replace('.', '_')}_{type_}_{stem}_seconds").lower()


@dataclass(frozen=True)
class Series:
    name: str                       # the family name (a counter's exposition adds _total)
    labels: tuple[tuple[str, str], ...]
    type: str                       # "gauge" | "counter" | "untyped"


@functools.lru_cache(maxsize=8)
def _engines(spec: str) -> tuple[JmxEngine, JmxEngine]:
    return JmxEngine(load(spec)), JmxEngine(JmxConfig.load(OWN_RULES))


def series_for(domain: str, type_: str, name: str | None, tags: tuple[tuple[str, str], ...], attribute: str,
               convention: str = STRIMZI, value: object = 0) -> Series | None:
    """The series one attribute of ``domain:type=T[,name=N],tags...`` becomes under a naming (None: not exported).

    The type is the matching rule's; in a family whose rules disagree jmx_exporter exposes UNKNOWN (see
    :meth:`exporter.jmx_engine.JmxEngine.families`).
    """
    props = (("type", type_), *((("name", name),) if name is not None else ()), *tags)
    user, own = _engines(convention)
    s = user.match(domain, props, attribute, value) if user.bean_exported(domain, props) else None
    if s is None and not is_kafka_domain(domain):
        s = own.match(domain, props, attribute, value)
    if s is None:
        return None
    return Series(s.name, s.labels, {"COUNTER": "counter", "GAUGE": "gauge"}.get(s.type, "untyped"))
