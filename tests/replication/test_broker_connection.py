"""The inter-broker connection's framing (broker/replication/client.py) without sockets: answers are cut out of
the byte stream however it is split, each goes to the one request waiting for it, and a broken stream ends the
connection with an error the waiting request receives."""

import struct

import pytest

from broker.replication.client import _FrameProtocol


class FakeTransport:
    def __init__(self) -> None:
        self.aborted = False

    def abort(self) -> None:
        self.aborted = True

    def is_closing(self) -> bool:
        return self.aborted


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _protocol() -> tuple[_FrameProtocol, FakeTransport]:
    protocol, transport = _FrameProtocol(), FakeTransport()
    protocol.connection_made(transport)  # type: ignore[arg-type]
    return protocol, transport


@pytest.mark.parametrize("cut", [1, 2, 3, 4, 5, 9])
def test_an_answer_split_anywhere_reaches_its_taker_whole(cut):
    protocol, _ = _protocol()
    got: list = []
    protocol.take_next(got.append)
    data = _frame(b"answer-1")
    protocol.data_received(data[:cut])
    assert got == []
    protocol.data_received(data[cut:])
    assert got == [b"answer-1"]


def test_answers_arriving_together_go_to_the_takers_in_turn():
    protocol, _ = _protocol()
    got: list = []
    protocol.take_next(lambda a: (got.append(a), protocol.take_next(got.append)))   # the next request, at once
    protocol.data_received(_frame(b"one") + _frame(b"two")[:3])
    assert got == [b"one"]
    protocol.data_received(_frame(b"two")[3:])
    assert got == [b"one", b"two"]


def test_an_answer_nothing_asked_for_ends_the_connection():
    protocol, transport = _protocol()
    protocol.data_received(_frame(b"unasked"))
    assert transport.aborted
    got: list = []
    protocol.take_next(got.append)   # a later request learns at once
    assert len(got) == 1 and isinstance(got[0], ConnectionError)


def test_a_negative_size_ends_the_connection_and_fails_the_waiting_request():
    protocol, transport = _protocol()
    got: list = []
    protocol.take_next(got.append)
    protocol.data_received(struct.pack(">i", -5) + b"xxxx")
    assert transport.aborted and len(got) == 1 and isinstance(got[0], ConnectionError)


def test_a_lost_connection_fails_the_waiting_request_once():
    protocol, _ = _protocol()
    got: list = []
    protocol.take_next(got.append)
    protocol.connection_lost(None)
    protocol.connection_lost(OSError("reset"))
    assert len(got) == 1 and "closed by the peer" in str(got[0])
