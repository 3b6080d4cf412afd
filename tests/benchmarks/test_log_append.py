"""benchmarks.log_append on a few batches: both settings run, the table's figures are per append, and the kept
descriptors' limit is put back."""

import pytest

from benchmarks import log_append
from broker.log import index


def test_log_append_measures_both_settings_and_restores_the_limit(capsys):
    before = index.write_descriptors.limit
    result = log_append.main(["--batches", "20", "--rounds", "2"])
    assert set(result) == {"leader", "follower"}
    for side in result.values():
        assert 0 < side["kept_us"][0] <= side["kept_us"][1] and 0 < side["reopened_us"][0] <= side["reopened_us"][1]
        # from the unrounded times: within the rounding of the printed ones
        assert side["ratio_best"] == pytest.approx(side["kept_us"][0] / side["reopened_us"][0], abs=0.005)
    assert index.write_descriptors.limit == before
    assert len(index.write_descriptors) == 0   # every log closed, every kept descriptor with it
    assert '"benchmark": "log_append"' in capsys.readouterr().out
