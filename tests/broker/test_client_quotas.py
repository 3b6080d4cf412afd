"""DescribeClientQuotas (48) and AlterClientQuotas (49) on a standalone broker, and the standalone quota store.

The expected errors and messages are what a real Kafka 3.9 broker (ZooKeeper mode) answered to the same requests
(tests/interop/test_client_quotas.py runs part of them on both)."""

from __future__ import annotations

import errno
import json
import math

import pytest
from kio.schema.errors import ErrorCode

from broker.metadata import BrokerInfo, LocalMetadata
from broker.quota.entity import DEFAULT, QuotaEntity, long_value
from exporter.jmx_config import java_double_str as java_double_string
from tests.broker.harness import Harness

DESCRIBE, ALTER = 48, 49


def E(*pairs: tuple[str, str | None]) -> list[dict]:
    return [{"entity_type": t, "entity_name": n} for t, n in pairs]


def op(key: str, value: float = 0.0, remove: bool = False) -> dict:
    return {"key": key, "value": value, "remove": remove}


def C(kind: str, match_type: int, match: str | None = None) -> dict:
    return {"entity_type": kind, "match_type": match_type, "match": match}


def alter(h, *entries: tuple[list[dict], list[dict]], validate_only: bool = False, version: int = 1):
    resp = h.request(ALTER, version, {"entries": [{"entity": e, "ops": o} for e, o in entries],
                                      "validate_only": validate_only})
    return [(r.error_code, r.error_message, sorted((x.entity_type, x.entity_name) for x in r.entity))
            for r in resp.entries]


def describe(h, *components: dict, strict: bool = False, version: int = 1):
    resp = h.request(DESCRIBE, version, {"components": list(components), "strict": strict})
    if resp.entries is None:
        return resp.error_code, resp.error_message
    assert (resp.error_code, resp.error_message) == (ErrorCode.none, "")   # Kafka: an empty message on success
    return {tuple((x.entity_type, x.entity_name) for x in e.entity): {v.key: v.value for v in e.values}
            for e in resp.entries}


@pytest.fixture
def h(tmp_path):
    with Harness(tmp_path) as harness:
        yield harness


def _populate(h) -> None:
    ok = [(ErrorCode.none, None)]
    assert [r[:2] for r in alter(h, (E(("user", "alice")), [op("producer_byte_rate", 1048576),
                                                              op("request_percentage", 50)]))] == ok
    assert [r[:2] for r in alter(h, (E(("client-id", "c1")), [op("consumer_byte_rate", 2000)]))] == ok
    assert [r[:2] for r in alter(h, (E(("user", "alice"), ("client-id", "c1")), [op("producer_byte_rate", 3000)]))
            ] == ok
    assert [r[:2] for r in alter(h, (E(("user", None)), [op("producer_byte_rate", 100)]))] == ok
    assert [r[:2] for r in alter(h, (E(("user", None), ("client-id", None)), [op("controller_mutation_rate", 1e7)]),
                                 version=0)] == ok


ALICE = (("user", "alice"),)
C1 = (("client-id", "c1"),)
ALICE_C1 = (("user", "alice"), ("client-id", "c1"))
DEF_USER = (("user", None),)
DEF_BOTH = (("user", None), ("client-id", None))


def test_describe_filters_as_kafka(h):
    _populate(h)
    everything = describe(h)
    assert everything == {ALICE: {"producer_byte_rate": 1048576.0, "request_percentage": 50.0},
                          C1: {"consumer_byte_rate": 2000.0}, ALICE_C1: {"producer_byte_rate": 3000.0},
                          DEF_USER: {"producer_byte_rate": 100.0}, DEF_BOTH: {"controller_mutation_rate": 1e7}}
    assert describe(h, strict=True) == {}
    assert set(describe(h, C("user", 2))) == {ALICE, ALICE_C1, DEF_USER, DEF_BOTH}   # ANY includes the default
    assert set(describe(h, C("user", 2), strict=True)) == {ALICE, DEF_USER}
    assert set(describe(h, C("user", 0, "alice"))) == {ALICE, ALICE_C1}
    assert set(describe(h, C("user", 0, "alice"), strict=True)) == {ALICE}
    assert set(describe(h, C("user", 1))) == {DEF_USER, DEF_BOTH}
    assert set(describe(h, C("user", 1, "alice"), strict=True)) == {DEF_USER}   # DEFAULT ignores the name
    assert set(describe(h, C("client-id", 2), strict=True)) == {C1}
    assert set(describe(h, C("user", 2), C("client-id", 0, "c1"))) == {ALICE_C1}
    assert describe(h, C("user", 0, "nobody"), strict=True) == {}
    assert describe(h, version=0) == everything


def test_describe_refuses_bad_filters_as_kafka(h):
    assert describe(h, C("user", 7)) == (ErrorCode.unknown_server_error, None)
    assert describe(h, C("user", 0, None)) == (ErrorCode.unknown_server_error, None)
    assert describe(h, C("user", 2), C("user", 2)) == (ErrorCode.invalid_request,
                                                       "Duplicate user filter component entity type")
    assert describe(h, C("client-id", 2), C("client-id", 1)) == (ErrorCode.invalid_request,
                                                                 "Duplicate client filter component entity type")
    assert describe(h, C("foo", 2)) == (ErrorCode.unsupported_version, "Custom entity type 'foo' not supported")
    assert describe(h, C("", 2)) == (ErrorCode.invalid_request, "Unexpected empty filter component entity type")
    assert describe(h, C("ip", 2), C("user", 2)) == (
        ErrorCode.invalid_request, "Invalid entity filter component combination, IP filter component should not be "
        "used with user or clientId filter component.")
    assert describe(h, C("ip", 2)) == {}


def test_alter_errors_per_entry_as_kafka(h):
    bob = E(("user", "bob"))
    long_msg = "Configuration producer_byte_rate must be a LONG value"
    assert alter(h, (bob, [op("foo", 1)])) == [(ErrorCode.invalid_request, "Invalid configuration key foo",
                                                [("user", "bob")])]
    for bad in (1.5, -5, 1e30, math.inf):
        assert alter(h, (bob, [op("producer_byte_rate", bad)]))[0][:2] == (ErrorCode.invalid_request, long_msg)
    assert alter(h, ([], [op("producer_byte_rate", 1)])) == [(ErrorCode.invalid_request,
                                                              "Invalid empty client quota entity", [])]
    assert alter(h, (E(("foo", "x")), [op("producer_byte_rate", 1)]))[0][:2] == (
        ErrorCode.invalid_request, "Unhandled client quota entity type: foo")
    assert alter(h, (E(("user", "")), [op("producer_byte_rate", 1)]))[0][:2] == (ErrorCode.invalid_request,
                                                                                 "Empty user not supported")
    assert alter(h, (E(("client-id", "")), [op("producer_byte_rate", 1)]))[0][:2] == (
        ErrorCode.invalid_request, "Empty client-id not supported")
    assert alter(h, (E(("ip", "1.2.3.4"), ("user", "a")), [op("connection_creation_rate", 1)]))[0][:2] == (
        ErrorCode.invalid_request, "Invalid quota entity combination, IP entity should not be used with user/client ID "
        "entity.")
    assert alter(h, (E(("ip", "no.such.host")), [op("connection_creation_rate", 1)]))[0][:2] == (
        ErrorCode.invalid_request, "no.such.host is not a valid IP or resolvable host.")
    assert alter(h, (E(("ip", "1.2.3.4")), [op("connection_creation_rate", 1.5)]))[0][:2] == (
        ErrorCode.invalid_request, "Configuration connection_creation_rate must be a INT value")
    assert alter(h, (E(("ip", "1.2.3.4")), [op("producer_byte_rate", 1)]))[0][:2] == (
        ErrorCode.invalid_request, "Invalid configuration key producer_byte_rate")
    assert alter(h, (bob, [op("connection_creation_rate", 1)]))[0][:2] == (
        ErrorCode.invalid_request, "Invalid configuration key connection_creation_rate")
    # a SCRAM key is one of DynamicConfig.User's keys, but a PASSWORD Kafka cannot convert: no message
    assert alter(h, (bob, [op("SCRAM-SHA-256", 1)]))[0][:2] == (ErrorCode.unknown_server_error, None)
    assert alter(h, (E(("client-id", "c")), [op("SCRAM-SHA-256", 1)]))[0][:2] == (
        ErrorCode.invalid_request, "Invalid configuration key SCRAM-SHA-256")
    assert describe(h) == {}   # nothing of a failed entry is applied


def test_alter_applies_as_kafka(h):
    ok = (ErrorCode.none, None)
    # zero and negative doubles are taken (Kafka 3.9 ZK mode checks neither); NaN as a LONG becomes 0
    assert alter(h, (E(("user", "bob")), [op("producer_byte_rate", 0), op("request_percentage", -5)]))[0][:2] == ok
    assert alter(h, (E(("user", "nan")), [op("producer_byte_rate", math.nan)]))[0][:2] == ok
    # a repeated entity type: the last name wins; a repeated key: the last value
    assert alter(h, (E(("user", "x"), ("user", "y")), [op("producer_byte_rate", 5), op("producer_byte_rate", 6)])
                 ) == [(ErrorCode.none, None, [("user", "y")])]
    # one entity twice in a request: both applied, answered once
    assert len(alter(h, (E(("user", "tw")), [op("producer_byte_rate", 5)]),
                     (E(("user", "tw")), [op("consumer_byte_rate", 5)]))) == 1
    # one good entry, one bad: the good one is applied
    assert [r[0] for r in alter(h, (E(("user", "g1")), [op("producer_byte_rate", 5)]),
                                (E(("user", "g2")), [op("producer_byte_rate", 5.5)]))] == [
        ErrorCode.none, ErrorCode.invalid_request]
    assert alter(h, (E(("user", "vo")), [op("producer_byte_rate", 5)]), validate_only=True)[0][:2] == ok
    got = describe(h, C("user", 2), strict=True)
    assert got == {(("user", "bob"),): {"producer_byte_rate": 0.0, "request_percentage": -5.0},
                   (("user", "nan"),): {"producer_byte_rate": 0.0}, (("user", "y"),): {"producer_byte_rate": 6.0},
                   (("user", "tw"),): {"producer_byte_rate": 5.0, "consumer_byte_rate": 5.0},
                   (("user", "g1"),): {"producer_byte_rate": 5.0}}
    # remove: any key, known or not; the last quota gone, the entity is gone
    assert alter(h, (E(("user", "g1")), [op("producer_byte_rate", remove=True), op("foo", remove=True)]))[0][:2] == ok
    assert (("user", "g1"),) not in describe(h)


def test_configs_are_kept_as_kafka_writes_them_and_survive_a_restart(tmp_path):
    with Harness(tmp_path) as h:
        _populate(h)
        alter(h, (E(("client-id", "sm")), [op("request_percentage", 0.0001), op("controller_mutation_rate", 123456.789)]))
        alter(h, (E(("user", "CN=a b,O=c*~+")), [op("request_percentage", 0.001)]))
        before = describe(h)
    files = list(tmp_path.rglob(LocalMetadata.FILE))
    assert len(files) == 1
    kept = json.loads(files[0].read_text())["client_quotas"]
    assert kept == {   # the znode paths and values a Kafka 3.9 broker wrote for the same requests
        "users/alice": {"producer_byte_rate": "1048576", "request_percentage": "50.0"},
        "clients/c1": {"consumer_byte_rate": "2000"},
        "users/alice/clients/c1": {"producer_byte_rate": "3000"},
        "users/<default>": {"producer_byte_rate": "100"},
        "users/<default>/clients/<default>": {"controller_mutation_rate": "1.0E7"},
        "clients/sm": {"request_percentage": "1.0E-4", "controller_mutation_rate": "123456.789"},
        "users/CN%3Da%20b%2CO%3Dc%2A%7E%2B": {"request_percentage": "0.001"}}
    with Harness(tmp_path) as h:
        assert describe(h) == before


def test_a_change_a_full_disk_cannot_take_is_answered_not_kept(h, monkeypatch):
    import common.atomic_file

    _populate(h)

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(common.atomic_file.os, "fsync", full)
    [(code, message, _)] = alter(h, (E(("user", "alice")), [op("producer_byte_rate", 1)]))
    assert code == ErrorCode.kafka_storage_error and "No space left" in message
    assert describe(h)[ALICE]["producer_byte_rate"] == 1048576.0


# ------------------------------------------------------------------ the standalone store and the entity helpers

def test_local_store_lists_scram_users_and_tells_subscribers(tmp_path):
    from broker.security.scram import SCRAM_SHA_512, credential_from_salted_password

    md = LocalMetadata(tmp_path, BrokerInfo(0, "127.0.0.1", 9092))
    store = md.client_quotas()
    seen: list[tuple[QuotaEntity, dict]] = []
    store.subscribe(lambda e, v: seen.append((e, v)))
    cred = credential_from_salted_password(SCRAM_SHA_512, b"s" * 16, b"p" * 64, 8192)
    md.scram_credentials().set("carol", SCRAM_SHA_512, cred)
    assert store.all() == {QuotaEntity(user="carol"): {}}   # as its /config/users znode would be
    store.set(QuotaEntity(user="carol", client_id=DEFAULT), {"producer_byte_rate": 10.0})
    store.set(QuotaEntity(user="carol", client_id=DEFAULT), {})
    assert seen == [(QuotaEntity(user="carol"), {}),
                    (QuotaEntity(user="carol", client_id=DEFAULT), {"producer_byte_rate": 10.0}),
                    (QuotaEntity(user="carol", client_id=DEFAULT), {})]


def test_entity_paths_and_value_strings_as_kafka():
    e = QuotaEntity(user="CN=a b,O=c*~+", client_id=DEFAULT)
    assert e.entity_path() == "users/CN%3Da%20b%2CO%3Dc%2A%7E%2B/clients/<default>"
    assert QuotaEntity.from_entity_path(e.entity_path()) == e
    assert QuotaEntity(client_id="c1").entity_path() == "clients/c1"
    assert QuotaEntity.from_entity_path("topics/t") is None
    assert [java_double_string(v) for v in (50.0, 1e7, 1e-4, 0.001, 123456.789, -5.0, 1.2345e-5, math.nan)] == [
        "50.0", "1.0E7", "1.0E-4", "0.001", "123456.789", "-5.0", "1.2345E-5", "NaN"]
    assert [long_value(v) for v in (1048576.0, 1.5, -5.0, 1e30, 0.0, 2.0000001)] == [1048576, None, None, None, 0, 2]


def test_ip_entities_are_stored_described_and_handed_to_the_connection_quotas(h):
    ok = [(ErrorCode.none, None)]
    assert [r[:2] for r in alter(h, (E(("ip", "10.0.0.7")), [op("connection_creation_rate", 5)]))] == ok
    assert [r[:2] for r in alter(h, (E(("ip", None)), [op("connection_creation_rate", 100)]))] == ok
    assert [r[:2] for r in alter(h, (E(("user", "alice")), [op("producer_byte_rate", 1000)]))] == ok
    h.settle()   # applied on the loop's next turn, after the answer
    ips = {(("ip", "10.0.0.7"),): {"connection_creation_rate": 5.0}, (("ip", None),): {"connection_creation_rate": 100.0}}
    assert describe(h, C("ip", 2)) == ips                                  # any IP, the default included
    assert describe(h, C("ip", 0, "10.0.0.7")) == {(("ip", "10.0.0.7"),): {"connection_creation_rate": 5.0}}
    assert describe(h, C("ip", 1)) == {(("ip", None),): {"connection_creation_rate": 100.0}}
    assert describe(h, C("user", 2)) == {(("user", "alice"),): {"producer_byte_rate": 1000.0}}   # no IPs
    assert describe(h) == {**ips, (("user", "alice"),): {"producer_byte_rate": 1000.0}}
    assert describe(h, strict=True) == {}
    connections = h.broker.quotas.connections
    assert (connections.quota_of("10.0.0.7"), connections.quota_of("10.0.0.8")) == (5.0, 100.0)
    assert not h.broker.quotas.managers.produce.quota_limit(("", "10.0.0.7"))   # no client quota from an IP
    assert [r[:2] for r in alter(h, (E(("ip", "10.0.0.7")), [op("connection_creation_rate", remove=True)]))] == ok
    h.settle()
    assert connections.quota_of("10.0.0.7") == 100.0
    stored = json.loads(next(h.broker.config.log_dir_list[0].rglob(LocalMetadata.FILE)).read_text())["client_quotas"]
    assert stored["ips/<default>"] == {"connection_creation_rate": "100"}
