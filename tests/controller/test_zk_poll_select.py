"""The ZooKeeper client's select (broker/controller/zk_client.poll_select): kazoo's `selector_select` semantics,
one poll(2) per call (issue 20: kazoo's epoll selector per call was most of the client's Python per request)."""

from __future__ import annotations

import os
import resource
import socket
import time

import pytest
from kazoo.handlers.utils import selector_select

from broker.controller.zk_client import PollingHandler, poll_select
from broker.controller.zk_session import new_client


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


@pytest.mark.parametrize("select_fn", [poll_select, selector_select])
def test_same_answers_as_kazoos(pair, select_fn):
    a, b = pair
    assert select_fn([a], [], [], 0) == ([], [], [])
    b.send(b"x")
    assert select_fn([a, b], [], [], 0) == ([a], [], [])
    assert select_fn([], [a], [], 0) == ([], [a], [])
    assert select_fn([a], [b], [], 0) == ([a], [b], [])


def test_ready_both_ways_is_reported_readable(pair):
    a, b = pair
    b.send(b"x")
    assert poll_select([a], [a], [], 0) == ([a], [], [])


def test_waits_for_the_timeout_and_no_longer(pair):
    a, b = pair
    t = time.monotonic()
    assert poll_select([a], [], [], 0.05) == ([], [], [])
    assert 0.04 <= time.monotonic() - t < 2
    b.send(b"x")
    t = time.monotonic()
    assert poll_select([a], [], [], None) == ([a], [], [])
    assert time.monotonic() - t < 2


def test_descriptors_above_select_limit(pair):
    a, b = pair
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft <= 1500:
        pytest.skip("open-file limit too low for a descriptor above 1,024")
    high = os.dup2(a.fileno(), 1500)
    try:
        b.send(b"x")
        assert poll_select([high], [], [], 0) == ([high], [], [])
    finally:
        os.close(high)


def test_bad_descriptors_raise_value_error_like_kazoo(pair):
    a, b = pair
    with pytest.raises(ValueError):
        poll_select([-1], [], [], 0)
    fd = os.dup(a.fileno())
    os.close(fd)
    with pytest.raises(ValueError):
        poll_select([fd], [], [], 0)
    with pytest.raises(ValueError):
        poll_select([a], [], [], -1)


def test_the_brokers_client_uses_it():
    zk = new_client("127.0.0.1:1/chroot", 6000)
    assert isinstance(zk.handler, PollingHandler)
    a, b = socket.socketpair()
    try:
        b.send(b"x")
        assert zk.handler.select([a], [], [], 0) == ([a], [], [])
    finally:
        a.close()
        b.close()
