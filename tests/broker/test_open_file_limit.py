"""The broker raises its soft open-file limit to the hard one at start (issue 14)."""

import logging
import resource

import pytest

from broker.__main__ import raise_open_file_limit


@pytest.fixture
def nofile():
    """The test process's RLIMIT_NOFILE, restored afterwards."""
    saved = resource.getrlimit(resource.RLIMIT_NOFILE)
    yield saved
    resource.setrlimit(resource.RLIMIT_NOFILE, saved)


def test_raises_the_soft_limit_to_the_hard_one(nofile, caplog):
    _, hard = nofile
    if hard < 512:
        pytest.skip(f"hard open-file limit {hard} leaves no room below it")
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
    with caplog.at_level(logging.INFO, logger="broker"):
        assert raise_open_file_limit() == hard
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard)
    assert f"raised open-file limit from 256 to {hard}" in caplog.text


def test_says_so_when_already_at_the_hard_limit(nofile, caplog):
    _, hard = nofile
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with caplog.at_level(logging.INFO, logger="broker"):
        assert raise_open_file_limit() == hard
    assert f"open-file limit already at the hard limit ({hard})" in caplog.text
