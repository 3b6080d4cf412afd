"""benchmarks.latency_wire's pcap reading and hop extraction on a synthetic capture (no tcpdump, no cluster)."""

import struct

import pytest

from benchmarks.latency_wire import read_pcap, record_hops, roles

LEADER = 9092
PRODUCER, CONSUMER, F1, F2 = 40001, 40002, 40003, 40004


def _request(api_key: int, client_id: str, size: int) -> bytes:
    cid = client_id.encode()
    head = struct.pack(">ihhih", size - 4, api_key, 12, 1, len(cid)) + cid
    return head + b"\0" * (size - len(head))


def _packet(src: int, dst: int, payload: bytes) -> bytes:
    tcp = struct.pack(">HHIIBBHHH", src, dst, 0, 0, 5 << 4, 0x18, 65535, 0, 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0, b"\x7f\0\0\1", b"\x7f\0\0\1") + tcp
    return b"\0" * 12 + b"\x08\x00" + ip  # Ethernet header (DLT_EN10MB, as Linux captures lo)


def _pcap(packets: list[tuple[float, bytes]]) -> bytes:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for t, pkt in packets:
        out += struct.pack("<IIII", int(t), round((t - int(t)) * 1e6), len(pkt), len(pkt)) + pkt
    return out


def _one_record(t0: float) -> list[tuple[float, bytes]]:
    ms = 1e-3
    return [
        (t0, _packet(PRODUCER, LEADER, _request(0, "rdkafka", 1200))),
        (t0 + 0.3 * ms, _packet(LEADER, F1, b"r" * 1200)),
        (t0 + 0.5 * ms, _packet(LEADER, F2, b"r" * 1200)),
        (t0 + 0.8 * ms, _packet(F1, LEADER, _request(1, "replica-fetcher-1", 80))),
        (t0 + 1.1 * ms, _packet(F2, LEADER, _request(1, "replica-fetcher-2", 80))),
        (t0 + 1.4 * ms, _packet(LEADER, CONSUMER, b"c" * 1200)),
        (t0 + 1.6 * ms, _packet(LEADER, PRODUCER, b"a" * 60)),
        (t0 + 1.9 * ms, _packet(CONSUMER, LEADER, _request(1, "rdkafka", 90))),
    ]


def test_read_pcap_gives_the_tcp_payload_segments():
    segments = read_pcap(_pcap(_one_record(100.0)))
    assert len(segments) == 8
    assert (segments[0].src, segments[0].dst, segments[0].length) == (PRODUCER, LEADER, 1200)
    assert segments[1].t == pytest.approx(100.0003, abs=1e-6)


def test_read_pcap_refuses_other_files():
    with pytest.raises(ValueError):
        read_pcap(b"\x0a\x0d\x0d\x0a" + b"\0" * 40)  # pcapng


def test_roles_come_from_the_first_request_of_each_connection():
    # the consumer's first request in this capture is its next Fetch: a Fetch without a fetcher's client id
    assert roles(read_pcap(_pcap(_one_record(1.0))), LEADER) == {
        PRODUCER: "producer", F1: "follower", F2: "follower", CONSUMER: "consumer"}


def test_record_hops_measure_each_record_from_its_produce():
    packets = _one_record(10.0) + _one_record(10.5)
    hops = record_hops(read_pcap(_pcap(packets)), LEADER)
    ms = {h: [round(v * 1e3, 3) for v in vs] for h, vs in hops.items()}
    assert ms["produce -> follower 1 data"] == [0.3, 0.3]
    assert ms["produce -> follower 2 data"] == [0.5, 0.5]
    assert ms["follower turnaround"] == [0.5, 0.6, 0.5, 0.6]
    assert ms["produce -> last follower fetch"] == [1.1, 1.1]
    assert ms["produce -> consumer data"] == [1.4, 1.4]
    assert ms["produce -> produce response"] == [1.6, 1.6]


def test_a_record_without_both_followers_answered_is_left_out():
    packets = [p for i, p in enumerate(_one_record(5.0)) if i != 2]  # follower 2 never got the data
    hops = record_hops(read_pcap(_pcap(packets)), LEADER)
    assert all(v == [] for v in hops.values())


def test_leader_is_awaited_and_broker_zero_counts():
    """A broker may answer leader -1 just after the ISR was seen full on another; broker id 0 is a leader too."""
    from types import SimpleNamespace

    from benchmarks.latency_wire import _leader

    answers = iter([-1, 0])

    class Admin:
        def list_topics(self, topic, timeout):
            part = SimpleNamespace(leader=next(answers))
            return SimpleNamespace(topics={topic: SimpleNamespace(partitions={0: part})})

    admin = Admin()
    assert _leader(admin, "wire") is None
    assert _leader(admin, "wire") == (0,)
