"""Unmodified Kafka clients (confluent-kafka, kafka-python, aiokafka, kcat) against the real broker subprocess.

The scenario bodies are in tests/scenarios/ (tests/interop/test_scenarios.py runs them on Apache Kafka too);
here each runs on the session's `shared_broker` over the full client matrix."""

from __future__ import annotations

import pytest

from tests.scenarios import admin, groups, produce_consume
from tests.scenarios.clients import CLIENTS, CODECS, PY_CLIENTS

# ---------------------------------------------------------------- 1. produce + consume round trip per codec


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client", PY_CLIENTS)
def test_roundtrip_keys_nullkeys_headers(shared_broker, topic_name, client, codec):
    produce_consume.roundtrip_keys_nullkeys_headers(shared_broker, topic_name, client, codec)


@pytest.mark.parametrize("codec", CODECS)
def test_roundtrip_kcat(shared_broker, topic_name, codec):
    produce_consume.roundtrip_kcat(shared_broker, topic_name, codec)


@pytest.mark.parametrize("consumer", CLIENTS)
@pytest.mark.parametrize("producer", PY_CLIENTS)
def test_cross_client_readback(shared_broker, topic_name, producer, consumer):
    produce_consume.cross_client_readback(shared_broker, topic_name, producer, consumer)


# ---------------------------------------------------------------- 2. a 3-member group rebalances on close and on kill -9

@pytest.mark.parametrize("how", ["close", "kill"])
@pytest.mark.parametrize("client", CLIENTS)
def test_group_of_three_rebalances(shared_broker, topic_name, client, how):
    groups.group_of_three_rebalances(shared_broker, topic_name, client, how)


# ---------------------------------------------------------------- 3. commit, restart the consumer, resume

@pytest.mark.parametrize("client", PY_CLIENTS)
def test_commit_restart_resume(shared_broker, topic_name, client):
    groups.commit_restart_resume(shared_broker, topic_name, client)


def test_commit_restart_resume_kcat(shared_broker, topic_name):
    groups.commit_restart_resume_kcat(shared_broker, topic_name)


@pytest.mark.parametrize("client", PY_CLIENTS)
def test_committed_offset_below_log_start_resets_to_earliest(shared_broker, topic_name, client):
    groups.committed_offset_below_log_start_resets_to_earliest(shared_broker, topic_name, client)


# ---------------------------------------------------------------- 4. admin APIs

def test_admin_confluent(shared_broker):
    admin.admin_confluent(shared_broker)


def test_confluent_list_all_topics(shared_broker, topic_name):
    admin.list_all_topics(shared_broker, topic_name)


def test_admin_kafka_python(shared_broker):
    admin.admin_kafka_python(shared_broker)


def test_admin_aiokafka(shared_broker):
    admin.admin_aiokafka(shared_broker)


# ---------------------------------------------------------------- 5. same key → same partition across clients

def test_keyed_partitioning_agrees_across_clients(shared_broker, topic_name):
    produce_consume.keyed_partitioning_agrees_across_clients(shared_broker, topic_name)


# ---------------------------------------------------------------- 6. idempotent producers

@pytest.mark.parametrize("client", PY_CLIENTS)
def test_idempotent_producer(shared_broker, topic_name, client):
    produce_consume.idempotent_producer(shared_broker, topic_name, client)


# ---------------------------------------------------------------- 7. positions inside batches and out of range

@pytest.mark.parametrize("client", PY_CLIENTS)
def test_seek_into_middle_of_compressed_batch(shared_broker, topic_name, client):
    produce_consume.seek_into_middle_of_compressed_batch(shared_broker, topic_name, client)


@pytest.mark.parametrize("client", PY_CLIENTS)
def test_batch_larger_than_partition_fetch_limit_is_still_delivered(shared_broker, topic_name, client):
    produce_consume.batch_larger_than_partition_fetch_limit_is_still_delivered(shared_broker, topic_name, client)
