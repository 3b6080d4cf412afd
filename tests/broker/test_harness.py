"""The in-process harness itself: its event loop keeps the manual clock's time, and its connections frame requests
and responses as a socket would."""

from __future__ import annotations

import asyncio

import pytest

from common.clock import ManualClock
from tests.broker.harness import Harness, ManualTimeLoop, decode_response, encode_request


def test_timers_fire_only_when_the_clock_reaches_them_each_at_its_time(tmp_path):
    with Harness(tmp_path) as h:
        fired: list[tuple[str, float]] = []

        async def sleeper(name: str, seconds: float) -> None:
            await asyncio.sleep(seconds)
            fired.append((name, h.clock.monotonic()))

        start = h.clock.monotonic()
        for name, s in (("late", 2.0), ("early", 0.5)):
            h.loop.create_task(sleeper(name, s))
        h.settle()
        assert fired == []
        h.advance(499)
        assert fired == []
        h.advance(10_000)  # past both: each fires at its own deadline, not at the end of the advance
        assert [(n, round(t - start, 6)) for n, t in fired] == [("early", 0.5), ("late", 2.0)]
        assert round(h.clock.monotonic() - start, 6) == 10.499


def test_settle_refuses_a_loop_that_never_goes_idle():
    loop = ManualTimeLoop(ManualClock())
    try:
        async def spin() -> None:
            while True:
                await asyncio.sleep(0)

        task = loop.create_task(spin())
        with pytest.raises(AssertionError, match="did not go idle"):
            loop.settle(max_steps=1000)
        task.cancel()
        loop.run_until_complete(asyncio.gather(task, return_exceptions=True))
    finally:
        loop.close()


def test_acks_zero_produce_gets_no_answer_and_the_next_request_is_matched(tmp_path):
    with Harness(tmp_path) as h:
        silent = h.send(0, 9, {"transactional_id": None, "acks": 0, "timeout": 5000, "topic_data": []})
        assert h.request(18, 3, {}).error_code == 0
        assert not silent.done() and len(h.client.responses()) == 1


def test_request_frames_round_trip_through_the_codec():
    frame = encode_request(18, 3, 7, {"client_software_name": "t", "client_software_version": "1"})
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    assert frame[4:12] == bytes.fromhex("0012" "0003" "00000007")  # api key, version, correlation id
    with pytest.raises(AssertionError, match="size prefix"):
        decode_response(frame[:-1], 18, 3, 7)
