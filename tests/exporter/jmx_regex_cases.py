"""Java regex cases for exporter/jregex.py: inputs written here, answers from java.util.regex (recorded in
data/jmx/regex-cases.tsv by :func:`record_regex_cases`, checked live by the slow test)."""

from __future__ import annotations

import re
from pathlib import Path

from exporter.jregex import translate
from tests.exporter.jmx_beans import DATA
from tests.support.jmx_reference import _esc, _unesc, java_regex

CASES_FILE = DATA / "regex-cases.tsv"

# (pattern, input): every one wrapped as jmx_exporter does, ^.*(?:pattern).*$, and matched whole.
CASES: list[tuple[str, str]] = [
    ("a(?i)bc", "xaBCy"), ("a(?i)bc", "xABCy"), ("a(?i)b(c)d|e", "E"), ("(a(?i)b)c", "aBc"), ("(a(?i)b)c", "aBC"),
    ("x(?i:y)z", "xYz"), ("x(?i:y)z", "xYZ"), ("(?i)é", "É"), ("(?iu)é", "É"), ("(?i)K", "k"),
    ("a++b", "aaab"), ("(a++)a", "aaa"), ("(?>a+)a", "aaa"), ("(a*+)(b?+)", "aab"),
    ("(.+?)=(.+)", "k=v=w"), ("(.+)=(.+)", "a=b=c"), ("(.*)=(.*?)", "a=b=c"),
    ("a.b", "a\rb"), ("a.b", "a\u2028b"), ("a.b", "a\u0085b"), ("(?s)a.b", "a\rb"), ("(?d)a.b", "a\rb"),
    ("(\\w+)", "é"), ("(\\w+)", "aé"), ("(\\d+)", "٣"), ("(\\s+)x", "\u00a0x"), ("\\bfoo\\b", "a foo b"),
    ("(?<n>a+)b\\k<n>", "aabaa"), ("(?<n>a+)b\\k<n>", "aaba"), ("(?<dom>kafka\\.\\w+)<", "kafka.server<x"),
    ("\\Qa.b\\E", "axb"), ("\\Qa.b\\E", "a.b"), ("\\Q(x)\\E+", "(x)))"),
    ("([\\d-]+)", "12-3"), ("([^,]+)", "a,b"), ("([]a]+)", "]a]"), ("([a-c\\s]+)", "ab c"),
    ("(\\p{Alpha}+)", "ab1"), ("\\p{Lower}+", "AB"), ("(\\p{Punct})", "a:b"), ("([\\p{Upper}\\d]+)", "AB1c"),
    ("a\\hb", "a b"), ("a\\hb", "a\nb"), ("a\\vb", "a\nb"), ("a\\Rb", "a\r\nb"),
    ("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)\\10", "abcdefghijj"), ("(a)\\10", "aa0"),
    ("\\x41\\u0042\\0103\\x{44}", "ABCD"), ("\\t\\e", "\t\x1b"), ("\\cA", "\x01"),
    ("a$", "a\n"), ("a$", "ab"), ("a\\z", "a"), ("a\\Z", "a"), ("^a", "ba"), ("\\Aa", "ab"),
    ("a{2,3}", "aaaa"), ("(a{2})+", "aaaa"), ("(a{2,})", "aaaaa"), ("(a{1,2}?)(a*)", "aaa"),
    ("(a|ab)(c|bcd)(d*)", "abcd"), ("(x)?y", "y"), ("(x)|(y)", "y"), ("(?:(a)|b)+", "ab"),
    ("(?=a)(\\w+)", "ab"), ("(\\w+)(?!c)", "abc"), ("(?<=a)(b+)", "abb"), ("(?<!a)(b+)", "abb"),
    ("(?x) a b # comment", "ab"), ("(?x)[ ]a", " a"),
    ("kafka.(\\w+)<type=(.+), name=(.+)PerSec\\w*, (.+)=(.+)><>Count",
     "kafka.server<type=BrokerTopicMetrics, name=MessagesInPerSec, topic=a, b=c><>Count: 5"),
    ("kafka.server<type=(.+), listener=(.+), networkProcessor=(.+)><>(.+)",
     "kafka.server<type=socket-server-metrics, listener=PLAINTEXT, networkProcessor=0><>connection-count: 3.0"),
    ("kafka.server<type=(.+)><>([a-z-]+)", "kafka.server<type=socket-server-metrics, listener=A><>io-ratio: 0.5"),
]


def ours(pattern: str, text: str, single_line: bool = False) -> tuple[str | None, ...] | None:
    """`single_line`: the twin exporter.jregex makes for texts without line terminators."""
    dot, end = translate(".", single_line), translate("$", single_line)
    m = re.compile(f"^{dot}*(?:{translate(pattern, single_line)}){dot}*{end}", re.ASCII).fullmatch(text)
    return None if m is None else m.groups()


def _fmt(result: tuple[str | None, ...] | None | str) -> str:
    if result is None:
        return "0"
    if isinstance(result, str):
        return f"E\t{result}"
    return "\t".join(["1", *("\\0" if g is None else _esc(g) for g in result)])


def _parse(fields: list[str]) -> tuple[str | None, ...] | None | str:
    if fields[0] == "0":
        return None
    if fields[0] == "E":
        return fields[1]
    return tuple(None if f == "\\0" else _unesc(f) for f in fields[1:])


def record_regex_cases(workdir: Path) -> Path:
    results = java_regex(CASES, workdir)
    lines = ["# pattern TAB input TAB java.util.regex's answer (1 + groups, 0: no match), recorded by "
             "tests/exporter/record_jmx_reference.py"]
    lines += [f"{_esc(p)}\t{_esc(s)}\t{_fmt(r)}" for (p, s), r in zip(CASES, results, strict=True)]
    CASES_FILE.write_text("\n".join(lines) + "\n")
    return CASES_FILE


def recorded() -> list[tuple[str, str, tuple[str | None, ...] | None | str]]:
    out = []
    for line in CASES_FILE.read_text().split("\n"):
        if not line or line.startswith("#"):
            continue
        f = line.split("\t")
        out.append((_unesc(f[0]), _unesc(f[1]), _parse(f[2:])))
    return out
