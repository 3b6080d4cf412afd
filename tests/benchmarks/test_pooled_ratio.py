"""benchmarks.pooled_ratio on hand-made vs_apache result lines: paired round ratios, the run ratios, A/A groups
kept apart, and an interval that is the same for the same input."""

import json

import pytest

from benchmarks import pooled_ratio

M = "confluent e2e p50 ms"


def run(a: str, b: str, pa: list[float], pb: list[float], interleave: bool = True) -> dict:
    med = {a: {M: sorted(pa)[len(pa) // 2]}, b: {M: sorted(pb)[len(pb) // 2]}}
    return {"benchmark": "vs_apache", "settings": {"interleave": interleave}, "results": med,
            "runs": {a: {"passes": [{M: x} for x in pa]}, b: {"passes": [{M: x} for x in pb]}}}


def test_rounds_are_paired_pass_by_pass():
    r = run("kafkascope", "apache-kafka", [4.0, 5.0, 6.0], [8.0, 5.0, 3.0])
    assert pooled_ratio.round_ratios(r, M) == [0.5, 1.0, 2.0]
    assert pooled_ratio.run_ratio(r, M) == 1.0   # medians 5.0 / 5.0


def test_groups_keep_a_over_b_and_a_over_a_apart(tmp_path):
    log = tmp_path / "runs.log"
    lines = ["  kafkascope: pass 1/3: ...",
             json.dumps(run("kafkascope", "apache-kafka", [4.0, 4.0, 4.0], [5.0, 4.0, 4.4])),
             json.dumps(run("apache-kafka", "apache-kafka#2", [4.0, 4.4, 4.2], [4.2, 4.0, 4.2])),
             json.dumps(run("kafkascope", "apache-kafka", [4.0, 4.0, 4.0], [3.0, 3.0, 3.0], interleave=False))]
    log.write_text("\n".join(lines) + "\n")
    found = pooled_ratio.groups([log])
    ab = ("kafkascope", "apache-kafka", "interleaved")
    assert list(found) == [ab, ("apache-kafka", "apache-kafka#2", "interleaved"),
                           ("kafkascope", "apache-kafka", "one after the other")]
    s = pooled_ratio.summarise(found[ab], M, 500)
    assert s["rounds"] == 3 and s["runs"] == 1 and s["runs_at_or_below_1"] == 1
    assert s["round_median"] == pytest.approx(4.0 / 4.4)
    lo, hi = s["interval_90"]
    assert 0.8 <= lo <= s["round_median"] <= hi <= 1.0
    assert pooled_ratio.summarise(found[ab], M, 500) == s   # seeded


def test_a_file_without_results_is_an_error(tmp_path):
    empty = tmp_path / "none.log"
    empty.write_text("nothing here\n")
    with pytest.raises(SystemExit, match="no vs_apache result line"):
        pooled_ratio.main([str(empty)])
