"""The transaction scenarios of tests/scenarios/transactions.py on every interop backend (our broker, Apache Kafka
3.9 in ZooKeeper mode, and 4.1 KRaft in the slow suite), through confluent-kafka's transactional API: the same
bodies tests/e2e/test_transactions.py runs on our standalone broker."""

from __future__ import annotations

from tests.scenarios import transactions


def test_commit_and_abort_across_partitions(backend, topic_name):
    transactions.commit_and_abort_across_partitions(backend, topic_name)


def test_second_producer_fences_the_first(backend, topic_name):
    transactions.second_producer_fences_the_first(backend, topic_name)


def test_expired_transaction_is_aborted_and_the_lso_moves_on(backend, topic_name):
    transactions.expired_transaction_is_aborted(backend, topic_name)


def test_pending_transactional_offsets_are_unstable(backend, topic_name):
    transactions.pending_offsets_are_unstable(backend, topic_name)
