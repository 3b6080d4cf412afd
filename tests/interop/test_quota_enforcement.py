"""Quota enforcement at the wire, the same request on ours and on Apache Kafka 3.9 (ZooKeeper mode): KIP-599's
controller mutation quota refuses a strict CreateTopics once the client's bucket is empty, with the same error,
message and throttle time (the bandwidth quotas' figures are benchmarks.quota_enforcement's)."""

from __future__ import annotations

import uuid

from kafkascope.local.wire import WireClient
from tests.e2e.helpers import wait_until

CREATE_TOPICS, ALTER_CLIENT_QUOTAS = 19, 49


def _create(w: WireClient, client: str, name: str, partitions: int, version: int):
    body = {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout": 30000, "validate_only": False}
    w.send(CREATE_TOPICS, version, body, client_id=client)
    return w.recv(CREATE_TOPICS, version)


def test_a_strict_create_topics_is_refused_once_the_bucket_is_empty(backend):
    tag = uuid.uuid4().hex[:8]
    client = f"kip599-{tag}"
    port = int(backend.bootstrap.rsplit(":", 1)[1])
    # Two connections of one client: a throttled answer mutes its connection until the bucket is back at zero.
    with WireClient(port) as w, WireClient(port) as other:
        w.send(ALTER_CLIENT_QUOTAS, 1, {"validate_only": False, "entries": [{
            "entity": [{"entity_type": "client-id", "entity_name": client}],
            "ops": [{"key": "controller_mutation_rate", "value": 1.0, "remove": False}]}]}, client_id=client)
        assert w.recv(ALTER_CLIENT_QUOTAS, 1).entries[0].error_code == 0
        # Kafka applies a quota config when its change notification is processed: until a permissive (v5) create
        # of 12 partitions, one more than the bucket of 11 holds, comes back throttled, the quota is not in force.
        attempts = iter(range(100))

        def throttled() -> bool:
            resp = _create(w, client, f"{tag}-fill-{next(attempts)}", 12, 5)
            assert resp.topics[0].error_code == 0
            return resp.throttle_time.total_seconds() > 0

        wait_until(throttled, 30, what="the controller mutation quota in force")
        refused = _create(other, client, f"{tag}-one", 1, 7)
    topic = refused.topics[0]
    assert (topic.error_code, topic.error_message) == (89, None)    # ApiError drops the generic message
    assert 0 < refused.throttle_time.total_seconds() <= 1.0       # one token short, refilled at 1/s
