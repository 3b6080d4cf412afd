"""benchmarks.lag_groups_scale: the growth exponent, and one tiny run on our broker (the monitor learns every
group's commits, the page carries a series per group and partition)."""

import pytest

from benchmarks.lag_groups_scale import exponent, run


def test_exponent_is_the_power_between_two_sizes():
    assert exponent(1.0, 10.0, 100, 1000) == 1.0
    assert exponent(1.0, 100.0, 100, 1000) == 2.0
    assert exponent(None, 1.0, 1, 10) is None and exponent(1.0, 2.0, 10, 10) is None


@pytest.mark.timeout(120)
def test_tiny_run_on_our_broker(capsys):
    r = run("kafkascope", groups=4, partitions=2, rounds=2)
    assert set(r) == {"commit_s", "catch_up_s", "log_end_ms", "evaluate_ms", "metrics_ms", "metrics_kib",
                      "rss_kib_per_group"}
    assert r["catch_up_s"] > 0 and r["metrics_kib"] > 0
    assert "kafkascope 4 groups" in capsys.readouterr().out
