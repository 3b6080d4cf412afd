"""One Prometheus /metrics page as a dict, and sums over it (the metrics parity tests, on either backend)."""

from __future__ import annotations

import urllib.request


def scrape(url: str) -> dict[str, dict[frozenset, float]]:
    """{sample name: {frozenset(label items): value}} of one /metrics page."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    out: dict[str, dict[frozenset, float]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, {})[frozenset(s.labels.items())] = s.value
    return out


def value(page: dict, name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels are exactly `labels`."""
    return sum(v for ls, v in page.get(name, {}).items() if dict(ls) == labels)
