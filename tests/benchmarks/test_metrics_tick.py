"""benchmarks.metrics_tick on a short run: both registries are ticked, an interval leaves the window, and the
figures are consistent with each other."""

from benchmarks import metrics_tick


def test_metrics_tick_times_whole_ticks_and_steps(capsys):
    r = metrics_tick.main(["--seconds", "72", "--rate", "100", "--rounds", "1"])
    whole, step = r["whole_tick_ms"], r["longest_step_ms"]
    assert 0 < whole["median"][0] <= whole["worst"][1] and 0 < step["median"][0] <= step["worst"][1]
    assert step["median"][1] <= whole["worst"][1]   # a step is part of a tick's work
    assert 0 < r["record_us"]["record_counts"][0] and 0 < r["record_us"]["record_value"][0]
    assert '"benchmark": "metrics_tick"' in capsys.readouterr().out
