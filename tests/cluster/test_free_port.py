"""kafkascope.local.process.free_port: below the kernel's ephemeral port range (where client connections take
their local ports), bindable, not handed out twice; the kernel's choice when the range is unknown."""

import random
import socket

from kafkascope.local.process import free_port


def test_ports_are_below_the_ephemeral_range_bindable_and_distinct(tmp_path):
    rng_file = tmp_path / "ip_local_port_range"
    rng_file.write_text("32768\t60999\n")
    rng = random.Random(7)
    ports = [free_port(rng, rng_file) for _ in range(200)]
    assert all(20768 <= p < 32768 for p in ports)
    assert len(set(ports)) == len(ports)
    with socket.socket() as s:
        s.bind(("127.0.0.1", ports[-1]))   # free when handed out


class _Draws(random.Random):
    """Draws the given ports in turn."""

    def __init__(self, ports):
        super().__init__(0)
        self.ports = list(ports)

    def randrange(self, start, stop=None, step=1):
        return self.ports.pop(0)


def test_a_taken_port_is_skipped(tmp_path):
    rng_file = tmp_path / "ip_local_port_range"
    rng_file.write_text("32768 60999")
    with socket.socket() as busy_sock, socket.socket() as probe:
        busy_sock.bind(("127.0.0.1", 0))
        busy_sock.listen()
        busy = busy_sock.getsockname()[1]
        probe.bind(("127.0.0.1", 0))
        other = probe.getsockname()[1]
        probe.close()
        rng_file.write_text(f"{max(busy, other) + 1} 60999")
        assert free_port(_Draws([busy, other]), rng_file) == other


def test_unknown_range_falls_back_to_the_kernel(tmp_path):
    port = free_port(random.Random(3), tmp_path / "missing")
    assert 0 < port < 65536
