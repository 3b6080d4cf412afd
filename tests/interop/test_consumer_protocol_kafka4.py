"""The consumer-protocol scenarios (KIP-848, tests/scenarios/consumer_protocol.py) on Apache Kafka 4.1, single-node
KRaft (kafkascope.local.apache_kafka.ApacheKafka), with the same broker settings our broker gets in
tests/e2e/test_consumer_protocol_clients.py: the same bodies, so a scenario that passes here and fails there is our
bug. One JVM for the module; slow suite."""

from __future__ import annotations

import uuid

import pytest

from tests.interop.conftest import apache_kafka_or_skip
from tests.scenarios import consumer_protocol

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def kafka41():
    from kafkascope.local.apache_kafka import DEFAULT_VERSION, ApacheKafka

    apache_kafka_or_skip(DEFAULT_VERSION)
    # offsets.topic.num.partitions stays ApacheKafka's 1: one coordinator for every group, as on our single broker
    with ApacheKafka(version=DEFAULT_VERSION, extra_props=consumer_protocol.BROKER_PROPS, log_level="WARN") as k:
        yield k


class _Kafka41:
    """ApacheKafka shaped as a tests.scenarios.Broker (`port` for the raw-wire topic creation)."""

    def __init__(self, k) -> None:
        self.k = k
        self.port = k.port

    @property
    def bootstrap(self) -> str:
        return self.k.bootstrap

    def log_tail(self, n: int = 60) -> str:
        return self.k.log_tail(n)


def _names(prefix: str) -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:8]
    return f"{prefix}-{suffix}", f"{prefix}g-{suffix}"


def test_group_splits_leaves_joins_and_survives_a_kill(kafka41):
    consumer_protocol.splits_leaves_joins_and_survives_a_kill(_Kafka41(kafka41), *_names("t"))


def test_commits_and_committed_offsets(kafka41):
    consumer_protocol.commits_read_back(_Kafka41(kafka41), *_names("c"))


def test_offsets_and_group_deleted(kafka41):
    consumer_protocol.offsets_and_group_deleted(_Kafka41(kafka41), *_names("d"))


def test_full_group_refuses_a_newcomer(kafka41):
    consumer_protocol.full_group_refuses_a_newcomer(_Kafka41(kafka41), *_names("f"))
