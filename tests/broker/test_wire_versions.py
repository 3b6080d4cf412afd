"""What ApiVersions advertises is served: every API's lowest and highest advertised version sent as a raw frame
gets a well-formed answer, not a closed connection. Kafka 4.0's one exception (Produce v0-2, advertised but
refused) is checked as such, and the floors are Kafka 4.0's (KIP-896 as adopted)."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from broker.protocol.handlers.api_versions import advertised
from broker.protocol.routes import handler_table
from kafkascope.local.wire import WireClient

API_VERSIONS, PRODUCE = 18, 0

# Kafka 4.0's lowest advertised version per API we serve. KIP-896 removed ListOffsets v0, Fetch v0-3,
# OffsetCommit v0-1, OffsetFetch v0, CreateTopics v0-1, DeleteTopics v0, OffsetForLeaderEpoch v0-1 and
# DescribeConfigs v0, DescribeLogDirs v0, and Produce v0-2, which Kafka still advertises (KAFKA-18659). Metadata, FindCoordinator and
# JoinGroup kept every version (the KIP's drafts had removed some).
KAFKA_4_0_FLOORS = {0: 0, 1: 4, 2: 1, 3: 0, 8: 2, 9: 1, 10: 0, 11: 0, 12: 0, 13: 0, 14: 0, 15: 0, 16: 0, 18: 0,
                    19: 2, 20: 1, 21: 0, 22: 0, 23: 2, 29: 1, 30: 1, 31: 1, 32: 1, 33: 0, 37: 0, 42: 0, 43: 0,
                    35: 1, 74: 0, 44: 0, 45: 0, 46: 0, 47: 0, 48: 0, 49: 0, 50: 0, 51: 0, 60: 0, 68: 0, 69: 0,
                    24: 0, 25: 0, 26: 0, 27: 1, 28: 0, 61: 0, 65: 0, 66: 0}  # transactions (KIP-98)
ADVERTISED_NOT_SERVED = {(PRODUCE, 0), (PRODUCE, 1), (PRODUCE, 2)}

# Smallest bodies that ask for something harmless (unset fields take kio's defaults: "", 0, empty arrays).
BODIES = {
    0: {"acks": 1, "timeout": 1000, "transactional_id": None},          # acks=0 would get no answer
    1: {"replica_id": -1, "max_wait": 0, "max_bytes": 1024},            # a consumer, not a follower
    2: {"replica_id": -1},
    18: {"client_software_name": "wire-test", "client_software_version": "1"},
    22: {"transactional_id": None, "transaction_timeout": 60000},
    23: {"replica_id": -1},
}


def _advertised_on_the_wire(port: int) -> dict[int, tuple[int, int]]:
    with WireClient(port) as w:
        resp = w.call(API_VERSIONS, 3, BODIES[API_VERSIONS])
    assert resp.error_code == ErrorCode.none
    return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}


def test_floors_are_kafka_4_0s(shared_broker):
    assert {k: lo for k, (lo, _hi) in _advertised_on_the_wire(shared_broker.port).items()} == KAFKA_4_0_FLOORS


def test_advertised_ranges_are_the_served_ranges_but_produces_floor():
    table = handler_table()
    served = {s.api_key: (s.min_version, s.max_version) for s in table.values()}
    listed = {a["api_key"]: (a["min_version"], a["max_version"]) for a in advertised(table)}
    assert served.pop(PRODUCE) == (3, 10) and listed.pop(PRODUCE) == (0, 10)
    assert listed == served


def test_lowest_and_highest_advertised_versions_are_answered(shared_broker):
    """A version advertised but not served would close the connection: Kafka's answer to an unparseable request."""
    closed = set()
    for api_key, (lo, hi) in sorted(_advertised_on_the_wire(shared_broker.port).items()):
        for version in sorted({lo, hi}):
            with WireClient(shared_broker.port) as w:
                if (api_key, version) in ADVERTISED_NOT_SERVED:
                    w.send_raw(_header_only(api_key, version))
                    assert w.is_closed_by_peer()
                    closed.add((api_key, version))
                    continue
                w.call(api_key, version, BODIES.get(api_key, {}))   # decodes fully, same correlation id
                assert w.call(API_VERSIONS, 3, BODIES[API_VERSIONS]).error_code == ErrorCode.none
    assert closed == {(PRODUCE, 0)}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_v0_to_2_close_the_connection_as_kafka_4_0(shared_broker, version):
    with WireClient(shared_broker.port) as w:
        w.send_raw(_header_only(PRODUCE, version) + b"\0" * 10)
        assert w.is_closed_by_peer()


def _header_only(api_key: int, version: int) -> bytes:
    """A request header v1 (kio has no schema for Produce v0-2, so no body can be encoded)."""
    client_id = b"wire-test"
    return (api_key.to_bytes(2, "big") + version.to_bytes(2, "big") + (1).to_bytes(4, "big")
            + len(client_id).to_bytes(2, "big") + client_id)
