"""jmx_exporter 1.0.1's naming applied to MBean attributes: ``JmxCollector.Receiver.recordBean`` and
``MatchedRuleToMetricSnapshotsConverter``, with client_java 1.3.1's name rules (what the agent runs with).

For one attribute of one MBean the match string is ``domain<k1=v1, k2=v2><>attribute: value`` (``<cache>`` in
place of the value for ``cache: true`` rules); the first rule whose ``^.*(?:pattern).*$`` matches it names the
sample: ``name`` (made safe, maybe lowercased), ``labels``, ``help``, ``type``, ``value``/``valueFactor``. A rule
without ``name`` exports the default format: ``domain_<first key's value>_attribute`` with the other keys as
labels. Then client_java strips ``_total``/``_created``/``_bucket``/``_info`` from the name; samples with one name
form one family whose type is the rules' type when they agree and UNKNOWN otherwise; a family where two samples
have the same labels gets an ``_objectname`` label on every sample; a COUNTER is exposed as ``<name>_total``.

Speed: rules are compiled once. The outcome for an (MBean, attribute) is kept while it cannot depend on the value:
always for ``cache: true`` rules, and for the others when :mod:`exporter.jregex` shows the pattern cannot reach
into the value. Only the rest (e.g. ``current-state: (.+)`` on a string) is matched again at each scrape. A new
MBean of a kind seen before (a new partition's ``Size``) is tried first on the rules the last one of its kind was
tried on, while every other rule still lacks a literal it needs (``_Hint``): the walk's outcome, without the walk.
Where jmx_exporter would fail a whole scrape (a negative counter, an illegal or repeated label name) the one
sample is dropped instead.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain
from typing import TypeVar, cast

from exporter.jmx_config import JmxConfig, Rule, canonical, java_value_str, parse_java_double
from exporter.jregex import LINE_END

log = logging.getLogger(__name__)

Props = tuple[tuple[str, str], ...]
_RESERVED = ("_total", "_created", "_bucket", "_info", ".total", ".created", ".bucket", ".info")
_LEGACY_NAME = re.compile(r"[a-zA-Z_:.][a-zA-Z0-9_:.]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_.][a-zA-Z0-9_.]*")
_UNSAFE_RUN = re.compile(r"[^a-zA-Z0-9:]+")  # '_' included: a run of unsafe characters and '_' is one '_'
_TYPES = {"COUNTER": "counter", "GAUGE": "gauge"}  # anything else is UNKNOWN (exposed as untyped)


def safe_name(name: str) -> str:
    """jmx_exporter's safeName: a leading digit gets ``_``; each run of illegal characters and ``_`` becomes one ``_``."""
    if not name:
        return name
    out = _UNSAFE_RUN.sub("_", name)
    return "_" + out if name[0].isdigit() else out


def snake_case(attr: str) -> str:
    """jmx_exporter's toSnakeAndLowerCase (``attrNameSnakeCase: true``)."""
    if not attr:
        return attr
    prev_upper = attr[0].isupper() or attr[0] == "_"
    out = [attr[0].lower()]
    for c in attr[1:]:
        up = c.isupper()
        if not prev_upper and up:
            out.append("_")
        out.append(c.lower())
        prev_upper = up or c == "_"
    return "".join(out)


def sanitize_metric_name(name: str) -> str:
    """client_java 1.3.1 PrometheusNaming.sanitizeMetricName on a safe name: reserved suffixes stripped, repeatedly."""
    if not _LEGACY_NAME.fullmatch(name):  # safe names always pass; anything else as replaceIllegalChars does
        name = "".join(c if c in ":." or c.isascii() and c.isalpha() or i > 0 and c.isascii() and c.isdigit()
                       else "_" for i, c in enumerate(name))
    for _ in range(len(name) + 1):
        for suffix in _RESERVED:
            if name == suffix:
                return suffix[1:]
        stripped = next((name[: -len(s)] for s in _RESERVED if name.endswith(s)), None)
        if stripped is None:
            return name
        name = stripped
    return name


def _help(domain: str, props: Props, attr: str) -> str:
    """jmx_exporter's default help: ``domain:name=N,type=T,attribute=A`` (``null`` for a key not there)."""
    name = type_ = "null"
    for k, v in props:
        if k == "name":
            name = v
        elif k == "type":
            type_ = v
    return f"{domain}:name={name},type={type_},attribute={attr}"


def _valid_label(name: str) -> bool:
    return bool(_LABEL_NAME.fullmatch(name)) and not name.startswith(("__", "._", "..", "_."))


@dataclass(slots=True)
class Sample:
    """One matched (MBean, attribute), everything but the attribute's value: reusable across scrapes."""

    name: str                  # the family name (sanitized, without the counter's _total)
    labels: Props              # sorted by label name
    type: str                  # COUNTER, GAUGE or anything else (UNKNOWN)
    help: str
    objectname: str            # the match string up to its last ':' (jmx_exporter's _objectname label)
    value: float | None        # the rule's `value:`, replacing the attribute's
    factor: float
    key: str = field(default="", compare=False)  # the labels as one string: cheap to compare across samples
    text: dict = field(default_factory=dict, compare=False, repr=False)  # exposition line starts, by variant

    def __post_init__(self) -> None:
        self.key = "\x00".join(chain.from_iterable(self.labels))


@dataclass
class Family:
    name: str
    type: str                  # "counter" | "gauge" | "unknown"
    help: str
    points: list[tuple[Sample, float]]
    unique: bool               # False: every sample carries an _objectname label

    def labels(self, s: Sample) -> dict[str, str]:
        out = dict(s.labels)
        if not self.unique:
            out["_objectname"] = s.objectname
        return out


_DROP = object()  # recordBean returned without a sample, whatever later rules say
_UNSEEN = object()
_MAX_PLANS = 500_000  # a bound, not a working size: callers forget() when their MBeans change
_Head = tuple[str, tuple[tuple[str, bool] | None, ...]]  # family name; each label's name and legality, or None

K = TypeVar("K")
V = TypeVar("V")


def _bounded_put(kept: dict[K, V], key: K, value: V) -> V:
    """`kept[key] = value`, the dict emptied first once it holds `_MAX_PLANS` entries; returns `value`."""
    if len(kept) > _MAX_PLANS:
        kept.clear()
    kept[key] = value
    return value


@dataclass(frozen=True, slots=True)
class _Hint:
    """For MBeans of one kind (domain, attribute, type, name, key count), what the walk over the rules did for
    the last one: the rules whose pattern it tried (the last of them matched, unless `complete`: none did and
    the walk went to the end), and for every other rule it passed a literal that was missing, by the text it was
    sought in (`_Texts.of_kind`). An MBean lacking all of those literals too gets the same checks on the tried
    rules alone. A first scrape of 10,000 partitions names ~100,000 rows of a few dozen kinds; this takes the
    literal scan and the walk over the rules off each."""

    tried: tuple[int, ...]
    missing: tuple[tuple[str, ...], ...]  # four tuples: literals sought in each kind of text
    complete: bool


class _Texts:
    """One attribute's match strings up to the value: as written, and with the attribute in snake_case;
    `single_line` when neither they nor the value's text hold a line terminator (the rules' faster twin applies)."""

    __slots__ = ("prefix", "attr", "plain", "_snake", "single_line")

    def __init__(self, prefix: str, attr: str, vstr: str) -> None:
        self.prefix, self.attr, self.plain, self._snake = prefix, attr, prefix + attr + ": ", ""
        self.single_line = LINE_END.search(self.plain) is None and LINE_END.search(vstr) is None

    @property
    def snake_attr(self) -> str:
        return snake_case(self.attr)

    @property
    def snake(self) -> str:
        if not self._snake:
            self._snake = self.prefix + snake_case(self.attr) + ": "
        return self._snake

    def of_kind(self, kind: int) -> str:
        """0: as written, 1: snake_case, 2 and 3: the same as a ``cache: true`` rule sees them."""
        text = self.snake if kind & 1 else self.plain
        return text + "<cache>" if kind & 2 else text


def _dynamic_from(rule: Rule, idx: int, fixed: str, numeric: bool, dynamic_from: int | None) -> int | None:
    """The first rule whose verdict may depend on the value: `idx` if `rule`'s may (a non-cache rule on a
    non-numeric value, or one whose pattern reaches into the value), else `dynamic_from` unchanged."""
    if dynamic_from is None and not rule.cache and not (numeric and not rule.dynamic and (
            rule.value_prefix is None or not rule.value_prefix.search(fixed))):
        return idx
    return dynamic_from


@dataclass(frozen=True, slots=True)
class _From:
    """A kept plan: match again at every scrape from rule `index` (earlier rules cannot match any value)."""

    index: int


class JmxEngine:
    """Names MBean attributes as jmx_exporter does under one configuration."""

    def __init__(self, config: JmxConfig) -> None:
        self.config = config
        self._plans: dict[tuple, Sample | _From | None] = {}
        self._beans: dict[tuple[str, Props], bool] = {}
        self._every_bean = config.include is None and not config.exclude
        self._hints: dict[tuple, _Hint] = {}  # MBeans of one kind -> the rule that named the last of them
        self._head_groups: dict[int, tuple[int, ...]] = {}  # rule -> the groups its name and label names use
        self._heads: dict[tuple, _Head | None] = {}  # (rule, those groups' text) -> name and label names
        self._helps: dict[str, str] = {}  # default help texts, one object each
        # Every literal a rule needs before the value, as one bit: an attribute's text is searched for each
        # distinct literal once, and a rule whose bits are not all present is passed over at the cost of an AND.
        lits = sorted({lit for r in config.rules for lit in r.fixed_literals}, key=len, reverse=True)
        self._lits = tuple(lits)
        self._need = [sum(1 << lits.index(lit) for lit in set(r.fixed_literals)) for r in config.rules]

    # -------------------------------------------------------------------------------------------- MBeans

    def bean_exported(self, domain: str, props: Props) -> bool:
        """includeObjectNames / excludeObjectNames (queryMBeans semantics)."""
        if self._every_bean:  # nothing to look up: no per-MBean entry either (a first scrape meets 100,000)
            return True
        key = (domain, props)
        ok = self._beans.get(key)
        if ok is None:
            cfg, d = self.config, dict(props)
            ok = (cfg.include is None or any(p.matches(domain, d) for p in cfg.include)) and \
                not any(p.matches(domain, d) for p in cfg.exclude)
            _bounded_put(self._beans, key, ok)
        return ok

    def attribute_excluded(self, domain: str, props: Props, attr: str) -> bool:
        ex = self.config.exclude_attributes
        return bool(ex) and attr in ex.get(canonical(domain, props), ())

    # -------------------------------------------------------------------------------------------- matching

    def match(self, domain: str, props: Props, attr: str, value: object) -> Sample | None:
        """The sample one attribute becomes (None: not exported)."""
        return self.match_settled(domain, props, attr, value)[0]

    def match_settled(self, domain: str, props: Props, attr: str, value: object,
                      keep: bool = True) -> tuple[Sample | None, bool]:
        """(sample or None, whether that outcome holds for every value of the attribute). `keep` False: a caller
        that keeps settled outcomes itself; only the value-dependent ones are kept here (where to match from)."""
        key = (domain, props, attr)
        plan = self._plans.get(key, _UNSEEN)
        if plan is not _UNSEEN and plan.__class__ is not _From:
            return plan, True  # type: ignore[return-value]
        start = plan.index if plan.__class__ is _From else 0
        result, dynamic_from = self._resolve(domain, props, attr, value, start)
        if result is _DROP:
            result = None
        if start == 0 and (keep or dynamic_from is not None):
            # result is a Sample or None here (_DROP was replaced above)
            _bounded_put(self._plans, key, cast("Sample | None", result) if dynamic_from is None else _From(dynamic_from))
        return result, dynamic_from is None  # type: ignore[return-value]

    def forget(self) -> None:
        """Drop every kept outcome (the set of MBeans changed a lot)."""
        self._plans.clear()
        self._beans.clear()
        self._hints.clear()

    def _resolve(self, domain: str, props: Props, attr: str, value: object, start: int) -> tuple[object, int | None]:
        """recordBean from rule `start` on: (Sample, None or _DROP; the first rule whose verdict may depend on the
        value, None when the outcome holds for every value)."""
        cfg = self.config
        prefix = domain + "<" + ", ".join(map("=".join, props)) + "><>"
        numeric = value.__class__ in (int, float)
        vstr = java_value_str(value)
        texts = _Texts(prefix, attr, vstr)
        hint_key = None
        if start == 0:
            hint_key = (domain, attr, props[:2], len(props))
            hint = self._hints.get(hint_key)
            if hint is not None:
                got = self._by_hint(hint, texts, domain, props, numeric, vstr)
                if got is not None:
                    return got
        dynamic_from = None
        present = self._present(texts.plain)
        snake_present = -1
        need = self._need
        missing: list[tuple[str, int]] | None = [] if start == 0 else None  # why rules before the match failed
        tried: list[int] = []  # the rules whose pattern was tried on the text
        for idx in range(start, len(cfg.rules)):
            rule = cfg.rules[idx]
            snake = rule.attr_snake_case
            fixed, have = texts.plain, present
            if snake:
                if snake_present < 0:
                    snake_present = self._present(texts.snake)
                fixed, have = texts.snake, snake_present
            if not rule.cache and need[idx] & have != need[idx]:
                if missing is not None:
                    missing.append((next(lit for lit in rule.fixed_literals if lit not in fixed), snake))
                continue  # a literal no value can supply is missing: no match whatever the value
            if rule.cache and missing is not None and rule.pattern is not None:  # its text has no value
                lit = next((lit for lit in rule.literals if lit not in fixed + "<cache>"), None)
                if lit is not None:
                    missing.append((lit, snake + 2))
                    continue
            dynamic_from = _dynamic_from(rule, idx, fixed, numeric, dynamic_from)
            tried.append(idx)
            sample = self._try(rule, texts, domain, props, vstr)
            if sample is not None:
                self._remember_hint(hint_key, missing, tried, False)
                return sample, dynamic_from
        self._remember_hint(hint_key, missing, tried, True)
        return None, dynamic_from

    def _try(self, rule: Rule, texts: _Texts, domain: str, props: Props, vstr: str, sift: bool = True) -> object:
        """The sample (or _DROP) `rule` gives, None when its pattern does not match (`sift`: look for the
        pattern's literals first, cheaper than a failing match; not worth it for a rule expected to match)."""
        fixed = texts.snake if rule.attr_snake_case else texts.plain
        text = fixed + ("<cache>" if rule.cache else vstr)
        m = None
        pattern = rule.single_line if texts.single_line else rule.pattern
        if pattern is not None:
            if sift and any(lit not in text for lit in rule.literals):
                return None
            m = pattern.fullmatch(text)
            if m is None:
                return None
        attribute = texts.snake_attr if rule.attr_snake_case else texts.attr
        return self._sample(rule, m, text, domain, props, attribute, texts.attr)

    def _by_hint(self, hint: _Hint, texts: _Texts, domain: str, props: Props, numeric: bool,
                 vstr: str) -> tuple[object, int | None] | None:
        """What the rules give, when every rule the hint passes over still lacks the literal it lacked for the
        MBean the hint was made from: only the rules tried then are tried, as the walk over all would (the same
        checks in the same order). None: not known this way (a literal now present, or no tried rule matched
        where the walk had stopped at a match): go through all the rules."""
        for kind, lits in enumerate(hint.missing):
            if lits and any(map(texts.of_kind(kind).__contains__, lits)):
                return None
        rules, last = self.config.rules, hint.tried[-1] if hint.tried else -1
        dynamic_from = None
        for idx in hint.tried:
            rule = rules[idx]
            fixed = texts.snake if rule.attr_snake_case else texts.plain
            if not rule.cache and not all(map(fixed.__contains__, rule.fixed_literals)):
                continue  # as in the walk: no match, and no say in dynamic_from
            dynamic_from = _dynamic_from(rule, idx, fixed, numeric, dynamic_from)
            sample = self._try(rule, texts, domain, props, vstr, sift=idx != last)  # the last one matched then
            if sample is not None:
                return sample, dynamic_from
        return (None, dynamic_from) if hint.complete else None

    def _remember_hint(self, key: tuple | None, missing: list[tuple[str, int]] | None, tried: list[int],
                       complete: bool) -> None:
        if key is None or missing is None:
            return
        _bounded_put(self._hints, key, _Hint(tuple(tried), tuple(tuple(lit for lit, k in missing if k == kind)
                                                     for kind in range(4)), complete))

    def _present(self, fixed: str) -> int:
        bits = 0
        for i, lit in enumerate(self._lits):
            if lit in fixed:
                bits |= 1 << i
        return bits

    def _sample(self, rule: Rule, m: re.Match | None, text: str, domain: str, props: Props, attribute: str,
                attr: str):
        cfg = self.config
        value = None
        if rule.value is not None:
            value = parse_java_double(rule.value.apply(m))  # type: ignore[arg-type]
            if value is None:
                return _DROP
        help_ = _help(domain, props, attr)
        help_ = self._helps.get(help_) or _bounded_put(self._helps, help_, help_)  # one object for a family's rows
        objectname = text[: text.rfind(":")]
        if rule.name is None:
            return self._default_export(domain, props, attribute, help_, objectname, value, rule)
        head = self._head(rule, m)  # type: ignore[arg-type]
        if head is None:
            return _DROP
        name, label_names = head
        if rule.help is not None:
            help_ = rule.help.apply(m)  # type: ignore[arg-type]
        labels: dict[str, str] = {}
        for (_, value_tpl), written in zip(rule.labels or (), label_names, strict=True):
            if written is None:   # the rule writes no name: no label
                continue
            label, legal = written
            label_value = value_tpl.apply(m)  # type: ignore[arg-type]
            if label_value:
                if label in labels or not legal:
                    log.warning("%s: %s gives label name %r twice or illegally; sample dropped (jmx_exporter "
                                "fails the scrape)", cfg.source, objectname, label)
                    return _DROP
                labels[label] = label_value
        return Sample(name, tuple(sorted(labels.items())), rule.type, help_, objectname, value, rule.value_factor)

    def _head(self, rule: Rule, m: re.Match) -> _Head | None:
        """The family name and label names `rule` gives for match `m` (None: no name, the sample is dropped; a
        label None: none written; each label with whether it is a legal name), remembered per the groups they are
        made of: the rows of one kind share them, and making them was a third of naming a row."""
        groups = self._head_groups.get(id(rule))
        if groups is None:
            groups = self._head_groups[id(rule)] = tuple(sorted(set().union(
                rule.name.groups, *(n.groups for n, _ in rule.labels or ()))))  # type: ignore[union-attr]
        key = (id(rule), m.group(*groups) if len(groups) > 1 else m.group(groups[0]) if groups else None)
        got = self._heads.get(key, _UNSEEN)
        if got is not _UNSEEN:
            return got  # type: ignore[return-value]
        cfg = self.config
        name = safe_name(rule.name.apply(m))  # type: ignore[union-attr]
        if name and cfg.lowercase_output_name:
            name = name.lower()
        head = None
        if name:
            labels: list[tuple[str, bool] | None] = []
            for name_tpl, _ in rule.labels or ():
                label = safe_name(name_tpl.apply(m))
                if cfg.lowercase_output_label_names:
                    label = label.lower()
                labels.append((label, _valid_label(label)) if label else None)
            head = (sanitize_metric_name(name), tuple(labels))
        return _bounded_put(self._heads, key, head)

    def _default_export(self, domain: str, props: Props, attribute: str, help_: str, objectname: str,
                        value: float | None, rule: Rule) -> Sample:
        cfg = self.config
        name = domain + (f"_{props[0][1]}" if props else "") + "_" + attribute
        name = safe_name(name)
        if cfg.lowercase_output_name:
            name = name.lower()
        labels = []
        for k, v in props[1:]:
            label = safe_name(k)
            labels.append((label.lower() if cfg.lowercase_output_label_names else label, v))
        return Sample(sanitize_metric_name(name), tuple(sorted(labels)), rule.type, help_, objectname, value,
                      rule.value_factor)

    # -------------------------------------------------------------------------------------------- families

    @staticmethod
    def families(matched: Iterable[tuple[Sample, object]]) -> list[Family]:
        """Group samples by name, sorted by name, as MetricSnapshots is: type, uniqueness and values resolved."""
        by_name: dict[str, list[tuple[Sample, object]]] = {}
        for s, v in matched:
            pts = by_name.get(s.name)
            if pts is None:
                by_name[s.name] = [(s, v)]
            else:
                pts.append((s, v))
        out = []
        for name in sorted(by_name):
            fam = JmxEngine.family(name, by_name[name])
            if fam is not None:
                out.append(fam)
        return out

    @staticmethod
    def family(name: str, pts: list[tuple[Sample, object]]) -> Family | None:
        """One family of :meth:`families` from its samples in order (None: no sample has a usable value)."""
        first = pts[0][0]
        typ = first.type
        for s, _ in pts:
            if s.type != typ:
                typ = "UNKNOWN"
                break
        unique = len(pts) == 1 or len({s.key for s, _ in pts}) == len(pts)
        fam = Family(name, _TYPES.get(typ, "unknown"), first.help, [], unique)
        counter = fam.type == "counter"
        points = fam.points
        for s, v in pts:
            if s.value is None and s.factor == 1.0 and v.__class__ in (int, float):
                x = float(v)  # the common case, inline
            else:
                x = _number(s, v)  # type: ignore[assignment]
                if x is None:
                    continue
            if counter and x < 0:
                continue
            points.append((s, x))
        return fam if points else None


def _number(s: Sample, v: object) -> float | None:
    if s.value is not None:
        return s.value * s.factor
    if v.__class__ is bool:
        return 1.0 if v else 0.0  # jmx_exporter: booleans are 1/0, valueFactor not applied
    if isinstance(v, int | float):
        return float(v) * s.factor
    return None

