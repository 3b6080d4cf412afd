"""broker/metrics/clients.py: KIP-511 client information and the per-client connection gauges, KIP-724's table."""

from broker.metrics.clients import ConnectionsByClient, client_information, is_deprecated


def test_client_information_is_registered_only_when_valid():
    assert client_information("apache-kafka-java", "3.9.0") == ("apache-kafka-java", "3.9.0")
    assert client_information("librdkafka", "2.6.1-RC1") == ("librdkafka", "2.6.1-RC1")
    for name, version in (("", ""), ("x", ""), ("bad name", "1"), ("-leading", "1"), ("x", "trailing."), ("x", "a_b")):
        assert client_information(name, version) is None, (name, version)


def test_a_gauge_at_zero_stays_until_room_is_needed():
    added, removed = [], []
    c = ConnectionsByClient(added.append, removed.append, max_entries=2)
    a, b, d = ("a", "1"), ("b", "1"), ("d", "1")
    c.increment(a)
    c.increment(a)
    c.increment(b)
    assert (c.value(a), c.value(b), added) == (2, 1, [a, b])
    c.increment(d)                       # full and nothing at zero: no gauge, as Kafka
    assert added == [a, b] and c.value(d) == 0
    c.decrement(b)
    assert removed == [] and c.value(b) == 0
    c.increment(d)                       # b at zero makes room
    assert removed == [b] and added == [a, b, d] and c.value(d) == 1
    c.decrement(a)
    c.increment(a)                       # back above zero: not removable any more
    c.increment(b)
    assert c.value(b) == 0 and removed == [b]


def test_deprecated_versions_are_kafka_39s():
    # kafka-clients-3.9.2.jar, common/message/*Request.json "deprecatedVersions"
    assert is_deprecated(0, 2) and not is_deprecated(0, 3)      # Produce 0-2
    assert is_deprecated(1, 3) and not is_deprecated(1, 4)      # Fetch 0-3
    assert is_deprecated(8, 1) and not is_deprecated(8, 2)      # OffsetCommit 0-1
    assert not is_deprecated(3, 0)                              # Metadata: none (the cluster launcher probes v1)
    assert not is_deprecated(11, 0) and not is_deprecated(10, 0)  # JoinGroup, FindCoordinator: none
    assert not is_deprecated(18, 0)                             # ApiVersions: none
