"""The jmx_exporter engine (exporter/jregex.py, jmx_config.py, jmx_engine.py) against recorded output of the real
jmx_exporter 1.0.1 agent for the same MBeans (tests/exporter/data/jmx, see record_jmx_reference.py), and its cache.
No JVM here; test_jmx_reference.py runs the agent live."""

from __future__ import annotations

import math

import pytest

from exporter.jmx_config import JmxConfig, JmxConfigError, java_double_str, parse_java_double
from exporter.jmx_engine import JmxEngine
from exporter.jregex import LINE_END, JavaRegexError, analyse
from tests.exporter import jmx_regex_cases
from tests.exporter.jmx_beans import BEAN_SETS, RULE_FILES, beans, rules_text, split_name
from tests.exporter.jmx_compare import differences, ours, reference_path


@pytest.mark.parametrize("bean_set", BEAN_SETS)
@pytest.mark.parametrize("rules", list(RULE_FILES))
def test_same_page_as_recorded_jmx_exporter(rules, bean_set):
    recorded = reference_path(rules, bean_set).read_text()
    got = ours(beans(bean_set), rules)
    diff = differences(got, recorded)
    assert not diff, f"{rules} on {bean_set} MBeans differs from jmx_exporter 1.0.1:\n" + "\n".join(diff[:40])
    assert recorded.count("\n") > 10  # the reference is not empty


def test_java_regex_translation_agrees_with_java():
    cases = jmx_regex_cases.recorded()
    assert len(cases) == len(jmx_regex_cases.CASES)
    wrong = []
    for pattern, text, java in cases:
        try:
            mine: object = jmx_regex_cases.ours(pattern, text)
        except JavaRegexError:
            mine = "refused"
        if mine != java and not (mine == "refused" and isinstance(java, str)):
            wrong.append(f"{pattern!r} on {text!r}: Java {java}, ours {mine}")
    assert not wrong, "\n".join(wrong)


def test_single_line_twin_agrees_with_java_on_texts_without_line_terminators():
    """The faster twin (plain `.`, `$` as the end) must give Java's answer wherever it is used."""
    cases = [(p, t, java) for p, t, java in jmx_regex_cases.recorded()
             if not isinstance(java, str) and LINE_END.search(t) is None]
    assert len(cases) > 60
    wrong = [f"{p!r} on {t!r}: Java {java}, twin {jmx_regex_cases.ours(p, t, True)}"
             for p, t, java in cases if jmx_regex_cases.ours(p, t, True) != java]
    assert not wrong, "\n".join(wrong)


def test_an_mbean_with_a_line_terminator_is_matched_with_java_semantics():
    """Java's `.` stops at U+2028 (and \\r, U+0085, ...): no match, where the single-line twin would match."""
    cfg = JmxConfig.from_yaml('rules:\n- pattern: "kafka.server<type=(.+)><>Value"\n  name: "k_$1"\n')
    engine = JmxEngine(cfg)
    assert engine.match_settled("kafka.server", (("type", "a\u2028b"),), "Value", 1.0)[0] is None
    assert cfg.rules[0].single_line.fullmatch("kafka.server<type=a\u2028b><>Value: 1.0")  # what it would do
    assert engine.match_settled("kafka.server", (("type", "ab"),), "Value", 1.0)[0] is not None


@pytest.mark.parametrize("pattern", ["[a-z&&[^m]]", "[a[b]]", "\\Gx", "(?c)a", "a(?x)b # to the end", "(a"])
def test_java_patterns_python_cannot_express_are_refused(pattern):
    with pytest.raises(JavaRegexError):
        analyse(pattern)


def _values_changed(bs):
    """The same MBean attributes with other values (strings too): what a later scrape sees."""
    out = []
    for name, attr, v in bs:
        if isinstance(v, bool):
            v = not v
        elif isinstance(v, int):
            v = v * 7 + 13
        elif isinstance(v, float):
            v = v * 3.5 + 0.25 if math.isfinite(v) else v
        elif isinstance(v, str):
            v = {"leader": "follower"}.get(v, v + "x")
        out.append((name, attr, v))
    return out


@pytest.mark.parametrize("rules", list(RULE_FILES))
def test_kept_outcomes_equal_fresh_matching_when_values_change(rules):
    cfg = JmxConfig.from_yaml(rules_text(rules))
    warm = JmxEngine(cfg)
    first = [(name, attr, v) for bset in BEAN_SETS for name, attr, v in beans(bset)]
    later = _values_changed(first)
    for name, attr, v in first:
        warm.match(*split_name(name), attr, v)
    fresh = JmxEngine(cfg)
    for (name, attr, v) in later:
        domain, props = split_name(name)
        assert warm.match(domain, props, attr, v) == fresh.match(domain, props, attr, v), (rules, name, attr, v)


def test_most_outcomes_are_kept_and_value_dependent_ones_are_not():
    cfg = JmxConfig.from_yaml(rules_text("features"))
    e = JmxEngine(cfg)
    settled = [e.match_settled(*split_name(n), a, v)[1] for bset in BEAN_SETS for n, a, v in beans(bset)]
    assert sum(settled) > 0.9 * len(settled)
    raft = e.match_settled("kafka.server", (("type", "raft-metrics"),), "current-state", "leader")
    assert raft[0] is not None and raft[0].labels == (("attr", "current-state"), ("state", "leader"))
    assert raft[1] is False  # `(current-state): (\w+)` reads the value
    digits = e.match_settled("kafka.server", (("type", "ReplicaManager"), ("name", "LeaderCount")), "Value", 12)
    assert digits[0] is not None and ("digits", "12") in digits[0].labels and digits[1] is False


@pytest.mark.parametrize(("pattern", "reaches_value"), [
    (r"kafka.(\w+)<type=(.+), name=(.+)><>Count", False),
    (r"kafka.server<type=(.+), listener=(.+), networkProcessor=(.+)><>(.+-total):", False),
    (r"kafka.(\w+)<type=(.+), name=(.+), (.+)=(.*)><>(\d+)thPercentile", False),
    (r"kafka.server<type=raft-metrics><>(current-state): (.+)", True),
    (r"kafka.server<type=(.+)><>(.+):(.*)", True),
])
def test_value_reach_analysis(pattern, reaches_value):
    import re

    a = analyse(pattern)
    fixed = "kafka.server<type=raft-metrics><>current-state: "
    reach = a.dynamic or (a.value_prefix is not None and re.search(f"(?:{a.value_prefix})\\Z", fixed, re.ASCII))
    assert bool(reach) == reaches_value


def test_config_errors_are_jmx_exporters():
    with pytest.raises(JmxConfigError, match="Must provide name, if help or labels are given"):
        JmxConfig.from_yaml("rules:\n- pattern: x\n  labels: {a: b}\n")
    with pytest.raises(JmxConfigError, match="Must provide pattern, if name is given"):
        JmxConfig.from_yaml("rules:\n- name: x\n")
    with pytest.raises(JmxConfigError, match="no group 3"):
        JmxConfig.from_yaml("rules:\n- pattern: (a)(b)\n  name: x_$3\n")
    with pytest.raises(JmxConfigError, match="not YAML"):
        JmxConfig.from_yaml("rules: [\n")
    with pytest.raises(JmxConfigError, match="lowercaseOutputName must be a boolean"):
        JmxConfig.from_yaml("lowercaseOutputName: 3\n")
    assert len(JmxConfig.from_yaml("").rules) == 1  # no rules: one default-format rule
    assert JmxConfig.from_yaml("rules:\n- pattern: a\n  type: UNTYPED\n").rules[0].type == "UNKNOWN"


@pytest.mark.parametrize(("x", "java"), [(0.0, "0.0"), (1.0, "1.0"), (0.001, "0.001"), (0.0001, "1.0E-4"),
                                         (1e7, "1.0E7"), (9999999.0, "9999999.0"), (12345678.9, "1.23456789E7"),
                                         (-2.5, "-2.5"), (float("nan"), "NaN"), (float("-inf"), "-Infinity")])
def test_double_to_string(x, java):
    # Double.toString's documented format; recorded Java output covers 1.0E7 and 1.5E-5 too (rules-features.yml).
    assert java_double_str(x) == java


def test_double_value_of():
    assert parse_java_double(" 1.5d ") == 1.5 and parse_java_double("1e3") == 1000.0
    assert parse_java_double("0x1p4") == 16.0 and math.isnan(parse_java_double("NaN"))
    assert parse_java_double("1_000") is None and parse_java_double("inf") is None and parse_java_double("") is None


@pytest.mark.parametrize("rules", list(RULE_FILES))
def test_fast_writer_writes_what_prometheus_client_writes(rules):
    for bean_set in BEAN_SETS:
        assert ours(beans(bean_set), rules, fast=True) == ours(beans(bean_set), rules), (rules, bean_set)


def _one_of_each_kind(bean_list):
    """The first bean of each kind (domain, attribute, type, name, key count) with three keys or more."""
    kinds: dict[tuple, tuple] = {}
    for name, attr, v in bean_list:
        domain, props = split_name(name)
        if len(props) >= 3:
            kinds.setdefault((domain, attr, props[:2], len(props)), (domain, props, attr, v))
    return list(kinds.values())


def _last_value_varied(rows, extras):
    """Each row again with each of `extras` appended to its last key's value ("": the value empty)."""
    return [(domain, props[:-1] + ((props[-1][0], props[-1][1] + extra if extra else ""),), attr, v)
            for domain, props, attr, v in rows for extra in extras]


@pytest.mark.parametrize("rules", list(RULE_FILES))
def test_hinted_matching_equals_walking_every_rule(rules):
    """An MBean of a kind met before is tried first against the rule that named the last one (JmxEngine's hint);
    the outcome must be what going through all the rules gives: for ordinary MBeans (many partitions of one
    kind), and for MBeans whose values carry the very literals that made earlier rules fail (a topic named
    ``PerSec``, ``><>Count``, ...) or are empty."""
    cfg = JmxConfig.from_yaml(rules_text(rules))
    lits = sorted({lit for name in RULE_FILES for r in JmxConfig.from_yaml(rules_text(name)).rules
                   for lit in r.literals})
    plain = [(*split_name(n), a, v) for bset in BEAN_SETS for n, a, v in beans(bset)]
    kinds = _one_of_each_kind(beans("broker"))
    many = _last_value_varied(kinds, [str(n) for n in range(10)])
    odd = _last_value_varied(kinds, [*lits, ""])
    hinted, walking = JmxEngine(cfg), JmxEngine(cfg)
    taken = 0
    # odd rows before and after ordinary ones: hints made from either, taken or refused for the other
    for i, (domain, props, attr, v) in enumerate(plain + many + odd + many + odd):
        hint = hinted._hints.get((domain, attr, props[:2], len(props)))
        got = hinted.match_settled(domain, props, attr, v)
        walking._hints.clear()
        want = walking.match_settled(domain, props, attr, v)
        assert got == want, (rules, domain, props, attr, v)
        if len(plain) <= i < len(plain) + len(many):
            taken += hint is not None and hint is hinted._hints.get((domain, attr, props[:2], len(props)))
    assert taken > len(many) // 2  # for the many partitions of one kind the hint was there, and held

