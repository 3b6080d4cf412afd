"""Render a :class:`exporter.registry.Registry` as a Prometheus page.

The registry is read as Kafka's MBeans (:mod:`exporter.mbeans`) and named by the ``prometheus.naming`` rule file
with jmx_exporter's semantics (:mod:`exporter.naming`, :mod:`exporter.jmx_engine`); MBeans of our own domains that
the file leaves out are named by ``exporter/rules/kafkascope.yaml``. Each timer that has recorded anything is also
exported as a classic Prometheus histogram (``..._seconds_bucket{le=...}``, ``_sum``, ``_count``; cumulative since
start; ours, not JMX's) so latency can be aggregated across brokers and SLO thresholds read exactly at a bucket bound.

Speed: an attribute's outcome is kept on the registry's metric object (a list per gauge/meter/timer, a dict per
gauge family), so a scrape reads values only for attributes that are exported, and the line start of every sample
(``name{labels} ``) is built once; :func:`render` writes those lines itself, byte for byte what prometheus-client's
``generate_latest`` writes for the same metrics (tested), and leaves the rest to it.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import math
import operator
from collections.abc import Generator, Iterator

from prometheus_client.core import CollectorRegistry, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.openmetrics.exposition import (
    UNDERSCORES,
    escape_label_name,
    escape_metric_name,
)
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.utils import floatToGoString

from common.steps import run_steps
from exporter import naming, row_blocks
from exporter.jmx_config import JmxConfig
from exporter.jmx_engine import Family, JmxEngine, Sample
from exporter.mbeans import attributes, props
from exporter.registry import Columns, MetricName, Registry

log = logging.getLogger(__name__)

_UNSET = object()  # not matched yet (or matched by a rule that reads the value: matched again each scrape)
MATCH_STEP = 50  # registry entries read between two yields of a stepped render
TEXT_STEP = 1000  # rows whose line starts are made between two yields of a stepped render
NAME_STEP = 50  # gauge family rows named by the rules (first seen) between two yields of a stepped render
FREEZE_AFTER_NAMED = 10_000  # a render that named this many new rows keeps what it made out of collections
# What a step that named rows yields: the share of its time the loop then gets for other work (other steps: as
# long as the step, exporter.http.Pauses). Naming happens once per new set of rows (after topics are made, after
# a restart) and at 10,000 partitions takes ~5 s: with the whole share that one scrape took 10-15 s, past
# Prometheus' default 10 s scrape_timeout, and failed; half, in steps of 50 rows, 7.8-9.0 s with a probe's p99
# during it 10-16 ms (a quarter in steps of 100: 5.9-7.5 s, but 29-36 ms). docs/latency.md, "The first scrape".
NAMING_PAUSE_SHARE = 0.5


def family_metrics(families: list[Family]) -> Iterator[Metric]:
    """prometheus-client metrics of jmx_exporter families: a COUNTER ``x`` is exposed as ``x_total``."""
    for fam in families:
        metric = Metric(fam.name, fam.help, fam.type)
        sample_name = fam.name + "_total" if fam.type == "counter" else fam.name
        for s, v in fam.points:
            metric.add_sample(sample_name, fam.labels(s), v)
        yield metric


def families_text(families: list[Family]) -> str:
    """What ``generate_latest`` writes for :func:`family_metrics`, with each sample's line start built once."""
    return "".join(family_texts(families))


def family_texts(families: list[Family]) -> Iterator[str]:
    """:func:`families_text` in pieces, a stepped render yielding between them: a family, or `TEXT_STEP` rows of
    one whose line starts are not made yet (at 10,000 partitions a new family's starts took ~70 ms in one piece)."""
    for fam in families:
        mname = escape_metric_name(fam.name + "_total" if fam.type == "counter" else fam.name, UNDERSCORES)
        doc = fam.help.replace("\\", r"\\").replace("\n", r"\n")
        out = [f"# HELP {mname} {doc}\n# TYPE {mname} {'untyped' if fam.type == 'unknown' else fam.type}\n"]
        variant = (mname, fam.unique)
        if isinstance(fam, row_blocks.BlockFamily):
            for block, values in fam.blocks:
                heads = block.heads.get(variant)
                if heads is not None:
                    out.append(_lines(heads, values))
                    continue
                heads = []
                for at in range(0, len(block.samples), TEXT_STEP):
                    made = [_line_head(mname, fam.labels(s)) for s in block.samples[at:at + TEXT_STEP]]
                    heads.extend(made)
                    out.append(_lines(made, values[at:at + TEXT_STEP]))
                    yield "".join(out)
                    out.clear()
                block.heads[variant] = heads
        else:
            add = out.append
            for n, (s, v) in enumerate(fam.points, 1):
                head = s.text.get(variant)
                if head is None:
                    head = s.text[variant] = _line_head(mname, fam.labels(s))
                add(head)
                add(_go_text(v))
                add("\n")
                if n % TEXT_STEP == 0:
                    yield "".join(out)
                    out.clear()   # cleared, not rebound: `add` is this list's append
        yield "".join(out)


def _lines(heads: list[str], values: list | tuple) -> str:
    """A block's lines from their starts and values, value texts remembered, one join."""
    known = _GO_TEXT.get
    return "\n".join(map(operator.add, heads, [known(v) or _go_text(v) for v in values])) + "\n"


_GO_TEXT: dict[float, str] = {}
_GO_TEXT_MAX = 50_000


def _go_text(v: float) -> str:
    """prometheus-client's floatToGoString, remembered per value: most values on a page repeat (0, 1, small
    counts), and the conversion was a tenth of a 10,000-partition scrape. 0.0 and -0.0 are equal keys with
    different texts, and NaN equals nothing: those are never remembered."""
    if v == 0:  # the commonest value, and the one whose sign the key would lose
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    t = _GO_TEXT.get(v)
    if t is None:
        t = floatToGoString(v)
        if v and v == v:
            if len(_GO_TEXT) >= _GO_TEXT_MAX:  # offsets and sizes rarely repeat: start again rather than grow
                _GO_TEXT.clear()
            _GO_TEXT[v] = t
    return t


def _line_head(mname: str, labels: dict[str, str]) -> str:
    if not labels:
        return mname + " "
    inner = ",".join(f'{_label_text(k)}="{_label_value(v)}"' for k, v in sorted(labels.items()))
    return f"{mname}{{{inner}}} "


@functools.lru_cache(maxsize=10_000)  # a page has few label names, on every line
def _label_text(name: str) -> str:
    """A label name as written on the page."""
    return escape_label_name(name, UNDERSCORES)


def _label_value(v: str) -> str:
    """A label value as the text format escapes it (prometheus_client's own escaping of values)."""
    return v.replace("\\", r"\\").replace("\n", r"\n").replace('"', r'\"')


def _fmt_le(le: float) -> str:
    return "+Inf" if le == float("inf") else repr(float(le))


class RegistryCollector:
    """Our registry as prometheus-client metrics (``collect()``; register with auto_describe off)."""

    def __init__(self, registry: Registry, naming_spec: str = naming.STRIMZI, config: JmxConfig | None = None) -> None:
        self.registry = registry
        self.naming = naming_spec
        self._path = None if config is not None else naming.rules_path(naming_spec)
        self._mtime = self._stat()
        self.config = config if config is not None else naming.load(naming_spec)
        self.engine = JmxEngine(self.config)
        self.own = JmxEngine(JmxConfig.load(naming.OWN_RULES))
        self._plans: dict[object, list | dict] = {}  # metric object -> outcome per attribute (or per row)
        self._blocks: dict[object, row_blocks.Block] = {}  # gauge family -> its rows as one block
        self.blocks = True  # False: every row by the generic path (tests compare the two)
        self.named = 0  # rows and attributes the rules named for the first time in the last read

    def _stat(self) -> int | None:
        try:
            return None if self._path is None else self._path.stat().st_mtime_ns
        except OSError:
            return None

    def _reload_if_changed(self) -> None:
        """As jmx_exporter: a rule file whose modification time changed is read again before the scrape; one that
        no longer loads leaves the previous rules in force."""
        mtime = self._stat()
        if mtime == self._mtime or mtime is None:
            return
        self._mtime = mtime
        try:
            config = JmxConfig.load(self._path)  # type: ignore[arg-type]
        except ValueError as e:
            log.error("prometheus.naming %s: reload failed, previous rules kept: %s", self.naming, e)
            return
        log.info("prometheus.naming %s: rules reloaded", self.naming)
        self.config, self.engine = config, JmxEngine(config)
        self._plans.clear()
        self._blocks.clear()

    # -------------------------------------------------------------------------------------------- matching

    def _match(self, mn: MetricName, name: str | None, tags: tuple, attr: str, value: object) -> tuple[object, bool]:
        """(Sample or None, settled) for one attribute, through the configured file, then our own rules."""
        domain, p = mn.domain, props(mn.type, name, tags)
        e = self.engine
        kafka = naming.is_kafka_domain(domain)
        if e.bean_exported(domain, p) and not e.attribute_excluded(domain, p, attr):
            # A settled outcome is kept in `_plans` here (per row: 13 MB at 3,000 partitions if the engine kept
            # it too); not for other domains, whose outcome may still depend on our own rules.
            s, settled = e.match_settled(domain, p, attr, value, keep=not kafka)
        else:
            s, settled = None, True
        if s is None and not kafka:
            s, own_settled = self.own.match_settled(domain, p, attr, value)
            settled = settled and own_settled
        return s, settled

    def matched(self) -> list[row_blocks.Entry]:
        """(sample, value) of every exported attribute now; a gauge family's rows may come as one
        (:class:`exporter.row_blocks.Block`, values) entry (:func:`exporter.row_blocks.expand` makes them points)."""
        with self.registry.reading():
            for _ in self.registry.read_steps():
                pass
            return run_steps(self.matched_steps())

    def matched_steps(self) -> Generator[float | None, None, list[row_blocks.Entry]]:
        """`matched` in steps of `MATCH_STEP` registry entries or attributes named for the first time, and of one
        gauge family (its new rows named `NAME_STEP` at a time), on a registry the caller has made ready
        (`Registry.read_steps`, which `render_steps` runs in steps of its own)."""
        self._reload_if_changed()
        self.named = 0
        reg = self.registry
        out: list[tuple[Sample, object]] = []
        add = out.append
        plans_of = self._plans
        work = 0   # entries read and attributes named by the rules (first seen) since the last yield
        for mn, m in reg.items():
            work += 1
            if work >= MATCH_STEP:
                work = 0
                yield None
            kind = m.kind  # type: ignore[attr-defined]
            plans = plans_of.get(m)
            if kind == "gauge_family":
                if plans is None:
                    plans = plans_of[m] = {}
                yield from self._rows(mn, m, plans, add)  # type: ignore[arg-type]
                yield None   # a family's rows may be one per partition: a step of its own
                continue
            if kind == "kafka_metric":
                attrs: tuple = ((mn.name, _read),)
                name, first_tags = None, mn.tags
            else:
                attrs, name, first_tags = attributes(m), mn.name, mn.tags
            if plans is None:
                plans = plans_of[m] = [_UNSET] * len(attrs)
            for i, (attr, get) in enumerate(attrs):
                s = plans[i]
                if s is None:
                    continue
                try:
                    v = get(m)
                except Exception:  # a gauge must never break the scrape
                    continue
                if s is _UNSET:
                    work += 1
                    self.named += 1
                    s, settled = self._match(mn, name, first_tags, attr, v)
                    if settled:
                        plans[i] = s
                    if s is None:
                        continue
                add((s, v))
        if len(plans_of) > 2 * len(reg._metrics) + 1000:  # metrics were removed: start afresh rather than grow
            plans_of.clear()
            self._blocks.clear()
            self.engine.forget()
            self.own.forget()
        return out

    def _rows(self, mn: MetricName, m: object, plans: dict, add) -> Iterator[float | None]:
        """A gauge family's (sample, value) entries, or one (block, values) entry while its rows are the ones
        named before; yields every `NAME_STEP` rows named for the first time (the rule engine takes ~60 µs a row:
        a broker's first scrape of 10,000 partitions held its loop ~0.6 s per family)."""
        rows: list | None = None
        try:
            got = m.fn()  # type: ignore[attr-defined]
            if got.__class__ is Columns:  # no pair per row; `tags` may be the very tuple of the last scrape
                tags, values = got.tags, got.values
            else:
                rows = list(got)
                tags, values = tuple(zip(*rows, strict=True)) or ((), ())
        except Exception:  # a gauge must never break the scrape
            return
        if len(plans) > 2 * len(tags) + 100:  # rows went away (deleted topics): forget them
            plans.clear()
        block = self._blocks.get(m)
        same = block is not None and (block.tags is tags or block.tags == tags)
        if same and block is not None:  # the same rows as before: named already
            vals = block.values(values)
            if vals is not None:
                add((block, vals))
                return
        samples: list[Sample | None] = []
        settled_all = True
        named = 0
        for t, v in (rows if rows is not None else zip(tags, values, strict=True)):
            s = plans.get(t, _UNSET)
            if s is None:
                samples.append(None)
                continue
            if v.__class__ is bool:
                v = int(v)
            if s is _UNSET:
                s, settled = self._match(mn, mn.name, t, "Value", v)
                if settled:
                    plans[t] = s
                else:
                    settled_all = False
                named += 1
                self.named += 1
                if named % NAME_STEP == 0:
                    yield NAMING_PAUSE_SHARE
                if s is None:
                    samples.append(None)
                    continue
            samples.append(s)
            add((s, v))
        if not same:
            made = row_blocks.make_block(tags, samples) if settled_all and self.blocks else None
            if made is None:
                self._blocks.pop(m, None)
            else:
                self._blocks[m] = made

    def families(self) -> list[Family]:
        """The families of the page, by the generic path alone (what prometheus-client's ``collect`` reads)."""
        return JmxEngine.families(row_blocks.expand(self.matched()))

    def fast_families(self) -> list[Family]:
        """The same families, those made of gauge-family blocks as :class:`exporter.row_blocks.BlockFamily`."""
        return row_blocks.families(self.matched())

    # -------------------------------------------------------------------------------------------- output

    def collect(self) -> Iterator[Metric]:
        yield from family_metrics(self.families())
        yield from self.extras()

    def extras(self) -> Iterator[Metric]:
        """What is ours rather than JMX's: the classic histograms and the raw families (process, Python)."""
        yield from self._histograms()
        for raw in self.registry.raw_families():
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


def _read(km: object) -> float:
    return float(km.read())  # type: ignore[attr-defined]


class _Collected:
    def __init__(self, metrics: Iterator[Metric]) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        return self.metrics


class PrometheusRegistry(CollectorRegistry):
    """A prometheus-client registry whose :func:`render` takes the fast path for our collector."""

    def __init__(self, ours: RegistryCollector) -> None:
        super().__init__(auto_describe=False)
        self.ours = ours
        self.others = CollectorRegistry(auto_describe=False)
        self.register(ours)


def build_prometheus_registry(registry: Registry, naming_spec: str = naming.STRIMZI,
                              process: bool = True) -> CollectorRegistry:
    """A prometheus-client registry rendering ours (and, on Linux, ``process_*`` from /proc).

    `naming_spec` is a ``prometheus.naming`` value: ``strimzi``, ``confluent`` or ``rules:/path/to/file.yml``.
    """
    prom = PrometheusRegistry(RegistryCollector(registry, naming_spec))
    if process:
        proc = ProcessCollector(registry=prom.others)
        prom.register(proc)
    return prom


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic collector off for a bounded, synchronous piece of work that allocates a lot and frees it
    all by reference counting. Why: a scrape allocates a few objects per series; every 70,000 or so of them
    CPython runs a collection of the older generations, whose cost is the whole heap's size (which grows with
    the partitions too), so the scrape grew faster than linearly (1,000 → 3,000 partitions: exponent 1.47;
    at 10,000 partitions two thirds of the scrape were full collections). Nothing the scrape makes is cyclic."""
    if not gc.isenabled():  # someone else paused it: leave it as it is
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _unfreeze_for_full_collection(phase: str, info: dict) -> None:
    if phase == "start" and info["generation"] == 2 and gc.get_freeze_count():
        gc.unfreeze()   # into the oldest generation, which this collection is about to walk


def freeze_until_full_collection() -> None:
    """Keep every object the cyclic collector tracks now out of its collections until the next full one. Why: a
    render that names many new rows leaves ~12 lasting objects a row (the samples, their labels, line starts and
    the rules' caches: 1.3 million at 10,000 partitions); the next young collection would walk them all with the
    broker's loop stopped (0.3 s), and the middle generation's collection again. They live as long as their
    rows. The full collection takes them back (``gc.unfreeze`` as it starts), so a garbage cycle frozen with them
    is collected there rather than kept for ever."""
    if _unfreeze_for_full_collection not in gc.callbacks:
        gc.callbacks.append(_unfreeze_for_full_collection)
    gc.freeze()


def render(prom: CollectorRegistry) -> bytes:
    """The Prometheus text exposition (format 0.0.4)."""
    return run_steps(render_steps(prom))


def render_steps(prom: CollectorRegistry) -> Generator[float | None, None, bytes]:
    """`render` in steps, for a broker's event loop to serve requests between them (exporter.http drives it): the
    registry's tick and before-read work (Registry.read_steps), its entries read `MATCH_STEP` at a time, the
    families grouped, then their text a piece at a time (`family_texts`). Gauges are read a few milliseconds apart, as
    jmx_exporter reads MBeans one by one while the broker runs."""
    if not isinstance(prom, PrometheusRegistry):
        return generate_latest(prom)
    with gc_paused():
        with prom.ours.registry.reading():
            yield from prom.ours.registry.read_steps()
            entries = yield from prom.ours.matched_steps()
        families = yield from row_blocks.families_steps(entries)
        del entries   # freed before the collector is back on
        yield None
        chunks: list[bytes] = []
        for text in family_texts(families):
            yield None
            chunks.append(text.encode())
        del families
        if prom.ours.named >= FREEZE_AFTER_NAMED:
            freeze_until_full_collection()
    yield None
    chunks.append(generate_latest(_Collected(prom.ours.extras())))
    chunks.append(generate_latest(prom.others))
    yield None
    return b"".join(chunks)   # one copy: a 10,000-partition page is 7 MB, and each copy of it takes milliseconds
