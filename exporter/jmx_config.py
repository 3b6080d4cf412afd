"""A jmx_exporter configuration file (1.0.1's ``JmxCollector.loadConfig``) and the Java value semantics it relies on.

Read: ``lowercaseOutputName``, ``lowercaseOutputLabelNames``, ``includeObjectNames`` (else ``whitelistObjectNames``),
``excludeObjectNames`` (else ``blacklistObjectNames``), ``excludeObjectNameAttributes``, and ``rules`` with
``pattern``, ``name``, ``value``, ``valueFactor``, ``help``, ``attrNameSnakeCase``, ``cache``, ``type`` and ``labels``
(sorted by name, as the TreeMap jmx_exporter keeps them in). Without ``rules`` there is one rule that matches
everything and exports it in the default format. Keys about connecting to a JVM (``hostPort``, ``jmxUrl``,
``username``, ``password``, ``ssl``) and ``startDelaySeconds`` have no meaning for a broker that is its own MBean
server and are ignored.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from exporter.jregex import VALUE_CHARS, analyse, translate


class JmxConfigError(ValueError):
    """The configuration file is one jmx_exporter would refuse."""


# ------------------------------------------------------------------------------------------------ Java values

_JAVA_DOUBLE = re.compile(r"[+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?)")
_JAVA_HEX = re.compile(r"([+-]?)0[xX]([0-9a-fA-F]*\.?[0-9a-fA-F]*)[pP]([+-]?\d+)[fFdD]?")


def parse_java_double(text: str) -> float | None:
    """``Double.valueOf(text)``, or None where Java throws NumberFormatException."""
    s = text.strip(" \t\n\x0b\f\r\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17"
                   "\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f")  # String.trim(): every char <= ' '
    if _JAVA_DOUBLE.fullmatch(s):
        body = s.rstrip("fFdD") if not s.endswith(("NaN", "Infinity")) else s
        return float(body.replace("Infinity", "inf").replace("NaN", "nan"))
    m = _JAVA_HEX.fullmatch(s)
    if m and m.group(2).strip("."):
        return float.fromhex(f"{m.group(1)}0x{m.group(2)}p{m.group(3)}")
    return None


def java_double_str(x: float) -> str:
    """``Double.toString(x)``: decimal for 1e-3 <= |x| < 1e7, else ``d.dddE±n``, shortest digits."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    digits, exp = _shortest(abs(x))
    if 1e-3 <= abs(x) < 1e7:
        point = exp + 1  # digits before the decimal point
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole, frac = digits[:point].ljust(point, "0"), digits[point:]
        return f"{sign}{whole}.{frac or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp}"


def _shortest(x: float) -> tuple[str, int]:
    """Shortest round-trip digits of x (no leading/trailing zeros) and the decimal exponent of the first one."""
    r = repr(x)
    if "e" in r:
        m, _, ex = r.partition("e")
        digits, exp = m.replace(".", ""), int(ex)
    else:
        intpart, _, frac = r.partition(".")
        if intpart.strip("0"):
            digits, exp = (intpart + frac).lstrip("0"), len(intpart.lstrip("0")) - 1
        else:
            stripped = frac.lstrip("0")
            digits, exp = stripped, -(len(frac) - len(stripped)) - 1
    return digits.rstrip("0") or "0", exp


def java_value_str(v: object) -> str:
    """What ``String.valueOf`` prints for an attribute value: ints as Long, floats as Double, bools as Boolean."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return java_double_str(v)
    return str(v)


# ------------------------------------------------------------------------------------------------ ObjectName

_PROPERTY = re.compile(r'([^,=:*?]+)=("(?:[^\\"]*(?:\\.)?)*"|[^,=:"]*)')


def parse_properties(text: str) -> tuple[tuple[str, str], ...]:
    """Key properties in their given order, values as written (quoted ones keep their quotes), as jmx_exporter's
    JmxMBeanPropertyCache reads ``getKeyPropertyListString()``."""
    out, rest = [], text
    for _ in range(len(text) + 1):
        m = _PROPERTY.match(rest)
        if not m:
            break
        out.append((m.group(1), m.group(2)))
        rest = rest[m.end():]
        rest = rest[1:] if rest.startswith(",") else rest
    return tuple(out)


def _wildcard(pattern: str) -> re.Pattern:
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern), re.DOTALL)


@dataclass(frozen=True)
class ObjectNamePattern:
    """A JMX ObjectName used as a query (``kafka.*:type=kafka-metrics-count,*``), with ObjectName.apply's rules."""

    domain: re.Pattern
    props: tuple[tuple[str, str | re.Pattern], ...]
    list_pattern: bool  # a ``*`` in the key list: other keys may be present

    @classmethod
    def parse(cls, text: str) -> ObjectNamePattern:
        domain, sep, keys = text.partition(":")
        if not sep or not keys:
            raise JmxConfigError(f"malformed ObjectName {text!r}")
        props: list[tuple[str, str | re.Pattern]] = []
        list_pattern = False
        for item in _split_keys(keys):
            if item == "*":
                list_pattern = True
                continue
            k, eq, v = item.partition("=")
            if not eq or not k:
                raise JmxConfigError(f"malformed ObjectName {text!r}: {item!r}")
            quoted = v.startswith('"')
            props.append((k, _wildcard(v) if not quoted and ("*" in v or "?" in v) else v))
        return cls(_wildcard(domain or "DefaultDomain"), tuple(props), list_pattern)

    def matches(self, domain: str, props: dict[str, str]) -> bool:
        if not self.domain.fullmatch(domain):
            return False
        if not self.list_pattern and len(props) != len(self.props):
            return False
        for k, want in self.props:
            have = props.get(k)
            if have is None or (have != want if isinstance(want, str) else not want.fullmatch(have)):
                return False
        return True


def _split_keys(keys: str) -> list[str]:
    """Split ``k=v,k2="a,b",*`` on the commas outside quotes."""
    out, cur, quoted, escaped = [], "", False, False
    for c in keys:
        if escaped:
            cur, escaped = cur + c, False
        elif c == "\\" and quoted:
            cur, escaped = cur + c, True
        elif c == '"':
            cur, quoted = cur + c, not quoted
        elif c == "," and not quoted:
            out.append(cur)
            cur = ""
        else:
            cur += c
    out.append(cur)
    return out


def canonical(domain: str, props: tuple[tuple[str, str], ...] | dict[str, str]) -> str:
    """ObjectName equality is on the canonical name: the domain and the key properties sorted by key."""
    items = props.items() if isinstance(props, dict) else props
    return domain + ":" + ",".join(f"{k}={v}" for k, v in sorted(items))


# ------------------------------------------------------------------------------------------------ rules

@dataclass(frozen=True)
class Replacement:
    """A ``Matcher.replaceAll`` replacement string, parsed once: literal text, ``$n``, ``${name}``, ``\\x``."""

    parts: tuple[str | int, ...]  # str: literal; int: group number; names are resolved to numbers

    @classmethod
    def parse(cls, text: str, groups: int, names: dict[str, int]) -> Replacement:
        parts: list[str | int] = []
        i = 0
        for _ in range(len(text) + 1):
            if i >= len(text):
                break
            c = text[i]
            if c == "\\":
                if i + 1 >= len(text):
                    raise JmxConfigError(f"character to be escaped is missing in {text!r}")
                parts.append(text[i + 1])
                i += 2
            elif c == "$":
                i = cls._group(text, i + 1, groups, names, parts)
            else:
                j = min([k for k in (text.find("\\", i), text.find("$", i)) if k >= 0] or [len(text)])
                parts.append(text[i:j])
                i = j
        return cls(tuple(parts))

    @staticmethod
    def _group(text: str, i: int, groups: int, names: dict[str, int], parts: list[str | int]) -> int:
        if i >= len(text):
            raise JmxConfigError(f"illegal group reference: group index is missing in {text!r}")
        if text[i] == "{":
            end = text.find("}", i)
            name = text[i + 1:end] if end > 0 else ""
            if name not in names:
                raise JmxConfigError(f"no group with name {{{name}}} in {text!r}")
            parts.append(names[name])
            return end + 1
        if not text[i].isdigit():
            raise JmxConfigError(f"illegal group reference in {text!r}")
        n, i = int(text[i]), i + 1
        for _ in range(len(text)):  # Java: the largest group number that exists
            if i < len(text) and text[i].isdigit() and int(f"{n}{text[i]}") <= groups:
                n, i = int(f"{n}{text[i]}"), i + 1
            else:
                break
        if n > groups:
            raise JmxConfigError(f"no group {n} in {text!r}")
        parts.append(n)
        return i

    def __post_init__(self) -> None:
        # A str.format string and the groups to fill it with: the groups are fetched in one C call.
        groups = tuple(p for p in self.parts if isinstance(p, int))
        fmt = "".join(p.replace("{", "{{").replace("}", "}}") if isinstance(p, str) else "{}" for p in self.parts)
        object.__setattr__(self, "_groups", groups)
        object.__setattr__(self, "_format", fmt if groups else fmt.replace("{{", "{").replace("}}", "}"))

    @property
    def groups(self) -> tuple[int, ...]:
        """The match groups the replacement reads."""
        return self._groups  # type: ignore[attr-defined]

    def apply(self, m: re.Match) -> str:
        groups: tuple[int, ...] = self._groups  # type: ignore[attr-defined]
        if not groups:
            return self._format  # type: ignore[attr-defined]
        if len(groups) == 1:
            return self._format.format(m.group(groups[0]) or "")  # type: ignore[attr-defined]
        return self._format.format(*[g or "" for g in m.group(*groups)])  # type: ignore[attr-defined]


@dataclass
class Rule:
    pattern: re.Pattern | None = None   # jmx_exporter's ^.*(?:PATTERN).*$ (Java semantics, see exporter.jregex)
    single_line: re.Pattern | None = None  # the same for texts without line terminators (exporter.jregex.LINE_END)
    java_pattern: str | None = None
    name: Replacement | None = None
    value: Replacement | None = None
    value_factor: float = 1.0
    help: Replacement | None = None
    attr_snake_case: bool = False
    cache: bool = False
    type: str = "UNKNOWN"
    labels: tuple[tuple[Replacement, Replacement], ...] | None = None
    value_prefix: re.Pattern | None = None  # see exporter.jregex.analyse
    dynamic: bool = False
    literals: tuple[str, ...] = ()
    fixed_literals: tuple[str, ...] = ()  # literals no value can supply: absent before the value, never a match


@dataclass
class JmxConfig:
    rules: list[Rule] = field(default_factory=list)
    lowercase_output_name: bool = False
    lowercase_output_label_names: bool = False
    include: list[ObjectNamePattern] | None = None  # None: every MBean
    exclude: list[ObjectNamePattern] = field(default_factory=list)
    exclude_attributes: dict[str, frozenset[str]] = field(default_factory=dict)  # canonical name -> attributes
    source: str = ""

    @classmethod
    def load(cls, path: str | Path) -> JmxConfig:
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise JmxConfigError(f"cannot read {path}: {e.strerror}") from None
        return cls.from_yaml(text, str(path))

    @classmethod
    def from_yaml(cls, text: str, source: str = "<string>") -> JmxConfig:
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise JmxConfigError(f"{source}: not YAML: {e}") from None
        try:
            return cls.from_dict(doc or {}, source)
        except JmxConfigError as e:
            raise JmxConfigError(f"{source}: {e}") from None

    @classmethod
    def from_dict(cls, doc: dict, source: str = "<dict>") -> JmxConfig:
        if not isinstance(doc, dict):
            raise JmxConfigError("the configuration is not a mapping")
        cfg = cls(source=source)
        cfg.lowercase_output_name = _bool(doc, "lowercaseOutputName")
        cfg.lowercase_output_label_names = _bool(doc, "lowercaseOutputLabelNames")
        for keys, attr in ((("includeObjectNames", "whitelistObjectNames"), "include"),
                           (("excludeObjectNames", "blacklistObjectNames"), "exclude")):
            key = next((k for k in keys if k in doc), None)  # the new name wins, as in 1.0.1
            if key is not None:
                setattr(cfg, attr, [ObjectNamePattern.parse(str(n)) for n in doc[key] or []])
        for name, attrs in (doc.get("excludeObjectNameAttributes") or {}).items():
            domain, _, key_text = str(name).partition(":")
            cfg.exclude_attributes[canonical(domain, parse_properties(key_text))] = frozenset(map(str, attrs or []))
        if "rules" in doc:
            cfg.rules = [_rule(r) for r in doc["rules"] or []]
        else:
            cfg.rules = [Rule()]
        return cfg


def _whole(python: str, single_line: bool) -> re.Pattern:
    """jmx_exporter's ``^.*(?:PATTERN).*$`` around a translated pattern."""
    dot, end = translate(".", single_line), translate("$", single_line)
    return re.compile(f"^{dot}*(?:{python}){dot}*{end}", re.ASCII)


def _bool(doc: dict, key: str) -> bool:
    v = doc.get(key, False)
    if not isinstance(v, bool):
        raise JmxConfigError(f"{key} must be a boolean, got {v!r}")
    return v


def _rule(y: dict) -> Rule:
    if not isinstance(y, dict):
        raise JmxConfigError(f"a rule must be a mapping, got {y!r}")
    r = Rule()
    groups, names = 0, {}
    if "pattern" in y:
        r.java_pattern = str(y["pattern"])
        a = analyse(r.java_pattern)
        groups = a.groups
        names = dict(_named_groups(a.python))
        r.pattern = _whole(a.python, False)
        r.single_line = _whole(a.single_line, True)
        # Longest first: the selective ones (``><>Count``, ``PerSec``) fail fast, ``kafka`` is everywhere.
        r.literals = tuple(sorted(a.literals, key=len, reverse=True))
        r.dynamic = a.dynamic
        r.fixed_literals = tuple(lit for lit in r.literals if _outside_value(lit))
        r.value_prefix = None if a.value_prefix is None else re.compile(f"(?:{a.value_prefix})\\Z", re.ASCII)

    def repl(key: str) -> Replacement | None:
        return None if key not in y else Replacement.parse(str(y[key]), groups, names)

    r.name, r.help = repl("name"), repl("help")
    if "value" in y and str(y["value"]) != "":
        r.value = repl("value")
    if "valueFactor" in y:
        factor = parse_java_double(str(y["valueFactor"]))
        r.value_factor = 1.0 if factor is None else factor  # Java keeps the default on a bad number
    r.attr_snake_case = _bool(y, "attrNameSnakeCase")
    r.cache = _bool(y, "cache")
    if "type" in y:
        r.type = "UNKNOWN" if y["type"] == "UNTYPED" else str(y["type"])
    if "labels" in y:
        labels = y["labels"] or {}
        r.labels = tuple((Replacement.parse(str(k), groups, names), Replacement.parse(str(labels[k]), groups, names))
                         for k in sorted(labels, key=str))
    if (r.labels is not None or r.help is not None) and r.name is None:
        raise JmxConfigError(f"Must provide name, if help or labels are given: {y}")
    if r.name is not None and r.pattern is None:
        raise JmxConfigError(f"Must provide pattern, if name is given: {y}")
    return r


def _outside_value(lit: str) -> bool:
    """No occurrence of `lit` in ``...: <value>`` can use the value's characters: it has a character no number
    prints, and no ``' '`` followed only by such characters (the value follows ``': '``)."""
    if all(c in VALUE_CHARS for c in lit):
        return False
    return not any(lit[j - 1] == " " and all(c in VALUE_CHARS for c in lit[j:]) for j in range(1, len(lit)))


def _named_groups(python: str) -> list[tuple[str, int]]:
    return [(n, i) for n, i in re.compile(python, re.ASCII).groupindex.items()]
