"""Our engine's exposition for a set of MBeans against jmx_exporter's, both parsed with prometheus-client's parser.

A page is reduced to ``{family: (type, help, {frozenset(labels): value})}``; sample names are checked through the
family (prometheus-client folds ``x_total`` into counter family ``x``, so a differing suffix shows as a differing
family or type). Values compare exactly (NaN equal to NaN): both sides read the same fixed values.
"""

from __future__ import annotations

import math
from pathlib import Path

from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from exporter.collector import families_text, family_metrics
from exporter.jmx_config import JmxConfig
from exporter.jmx_engine import JmxEngine
from tests.exporter.jmx_beans import RULE_FILES, rules_text, split_name
from tests.support.jmx_reference import AGENT_OWN_PREFIXES

Page = dict[str, tuple[str, str, dict[frozenset, float]]]


class _Collected:
    def __init__(self, metrics: list) -> None:
        self.metrics = metrics

    def collect(self):
        return iter(self.metrics)


def ours(beans: list[tuple[str, str, object]], rules: str, fast: bool = False) -> str:
    """The text our engine exposes for these MBean attributes under rule file `rules` (a RULE_FILES key), through
    prometheus-client (or our own writer, `fast`)."""
    engine = JmxEngine(JmxConfig.from_yaml(rules_text(rules), str(RULE_FILES[rules])))
    matched = []
    for name, attr, value in beans:
        domain, props = split_name(name)
        if not engine.bean_exported(domain, props) or engine.attribute_excluded(domain, props, attr):
            continue
        s = engine.match(domain, props, attr, value)
        if s is not None:
            matched.append((s, value))
    families = JmxEngine.families(matched)
    if fast:
        return families_text(families)
    return generate_latest(_Collected(list(family_metrics(families)))).decode()  # type: ignore


def parse(text: str) -> Page:
    page: Page = {}
    for fam in text_string_to_metric_families(text):
        if fam.name.startswith(AGENT_OWN_PREFIXES):
            continue
        points = {frozenset(s.labels.items()): s.value for s in fam.samples}
        page[fam.name] = (fam.type, fam.documentation, points)
    return page


def differences(ours_text: str, theirs_text: str, check_help: bool = True) -> list[str]:
    """Human-readable differences (empty when the pages agree on families, types, help, labels and values)."""
    a, b = parse(ours_text), parse(theirs_text)
    out = [f"only ours: {n} {a[n][0]} {sorted(map(sorted, a[n][2]))[:3]}" for n in sorted(a.keys() - b.keys())]
    out += [f"only jmx_exporter: {n} {b[n][0]} {sorted(map(sorted, b[n][2]))[:3]}" for n in sorted(b.keys() - a.keys())]
    for n in sorted(a.keys() & b.keys()):
        (ta, ha, pa), (tb, hb, pb) = a[n], b[n]
        if ta != tb:
            out.append(f"{n}: type ours {ta} vs jmx_exporter {tb}")
        if check_help and ha != hb and len(pa) == 1:  # several MBeans: help is the first one's, in HashSet order
            out.append(f"{n}: help ours {ha!r} vs jmx_exporter {hb!r}")
        for labels in pa.keys() ^ pb.keys():
            out.append(f"{n}: labels {sorted(labels)} only {'ours' if labels in pa else 'jmx_exporter'}")
        for labels in pa.keys() & pb.keys():
            x, y = pa[labels], pb[labels]
            if not (x == y or math.isnan(x) and math.isnan(y)):
                out.append(f"{n}{dict(labels)}: value ours {x} vs jmx_exporter {y}")
    return out


def reference_path(rules: str, bean_set: str) -> Path:
    return Path(__file__).with_name("data") / "jmx" / "reference" / f"{rules}--{bean_set}.prom"
