"""The SLOs as PromQL (errors and total per cluster, or a bad-fraction gauge), shared by the recording and
alerting rules (dashboards/build.py) and the SLO dashboard (dashboards/grafana.py). Names, targets and display names
come from slo/specs/default.yaml, the file the Spark SLO report reads."""

from __future__ import annotations

from dataclasses import dataclass

from dashboards.metrics import M


@dataclass(frozen=True)
class SLO:
    name: str
    display: str
    target: float
    kind: str   # "ratio" (errors / total from counters) or "timeslice" (a 0..1 bad-fraction gauge averaged)
    errors: str = ""  # PromQL with $W for the window, summed by cluster
    total: str = ""
    bad_now: str = ""  # timeslice: fraction of things bad right now, by cluster


def _or_zero(expr: str, like: str) -> str:
    """`expr` by cluster, or 0 for every cluster `like` has (counters that appear only with their first event)."""
    return f"({expr} or ({like} * 0))"


def slos() -> list[SLO]:
    """Every SLO with its PromQL, in the order of the rule groups."""
    from slo.specs import load_specs

    targets = {s.name: (s.objective.target, s.display_name) for s in load_specs()}
    consumed = f"sum by (cluster) (rate({M.x_consumed}[$W]))"
    lost = _or_zero(f"sum by (cluster) (rate({M.x_lost}[$W]))", consumed)
    late = _or_zero(f"sum by (cluster) (rate({M.x_late}[$W]))", consumed)
    attempts = f"sum by (cluster) (rate({M.x_attempts}[$W]))"
    successes = f"sum by (cluster) (rate({M.x_successes}[$W]))"
    e2e_total = f"sum by (cluster) (rate({M.x_e2e_count}[$W]))"
    e2e_good = f'sum by (cluster) (rate({M.x_e2e_bucket}{{le="0.5"}}[$W]))'
    defs = {
        "write-availability": dict(kind="ratio", errors=f"clamp_min({attempts} - {successes}, 0)", total=attempts),
        "read-availability": dict(kind="ratio", errors=f"({late} + {lost})", total=f"({consumed} + {lost})"),
        "e2e-latency": dict(kind="ratio", errors=f"clamp_min({e2e_total} - {e2e_good}, 0)", total=e2e_total),
        "no-loss": dict(kind="ratio", errors=lost, total=f"({consumed} + {lost})"),
        "consumer-lag": dict(kind="timeslice",
                             bad_now=f"avg by (cluster) ({M.burrow_status} >= bool 2)"),
    }
    out = []
    for name, d in defs.items():
        target, display = targets.get(name, (0.99, name))
        out.append(SLO(name, display, target, **d))
    return out
