"""Metrics parity for the group coordinator's writes: an offset commit is an append to `__consumer_offsets` that
Kafka 3.9 counts in BrokerTopicMetrics (ReplicaManager.appendRecords marks the topic's and the all-topics
meters), so the same commit must move the same counters on our broker and on Apache Kafka."""

from __future__ import annotations

import uuid

from kafkascope.local.wire import WireClient
from tests.e2e.helpers import create_topic, wait_until
from tests.interop.metrics_page import scrape, value

FIND_COORDINATOR, OFFSET_COMMIT = 10, 8
MESSAGES = "kafka_server_brokertopicmetrics_messagesin_total"
REQUESTS = "kafka_server_brokertopicmetrics_totalproducerequests_total"
OFFSETS = "__consumer_offsets"


def _commit(port: int, group: str, topic: str, partitions: int) -> bool:
    """One OffsetCommit v8 of `partitions` offsets; False while the coordinator is not ready (Kafka creates
    __consumer_offsets on first use)."""
    with WireClient(port) as w:
        found = w.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
        if found.coordinators[0].error_code != 0:
            return False
        resp = w.call(OFFSET_COMMIT, 8, {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                                         "group_instance_id": None, "topics": [{"name": topic, "partitions": [
                                             {"partition_index": p, "committed_offset": 5, "committed_leader_epoch": -1,
                                              "committed_metadata": ""} for p in range(partitions)]}]})
    codes = {p.error_code for t in resp.topics for p in t.partitions}
    return codes == {0}


def test_an_offset_commit_counts_as_an_append_to_consumer_offsets(backend, backend_name):
    topic = f"oc-{uuid.uuid4().hex[:8]}"
    create_topic(backend.port, topic, 3)
    wait_until(lambda: _commit(backend.port, f"warm-{topic}", topic, 1), 60, 0.5, what="a ready coordinator")
    url = backend.metrics_url
    before = wait_until(lambda: (pg := scrape(url)) and value(pg, MESSAGES, topic=OFFSETS) >= 1 and pg, 30, 0.5,
                        what=f"{backend_name}: the warm-up commit counted")
    assert _commit(backend.port, f"g-{topic}", topic, 3)
    after = wait_until(lambda: (pg := scrape(url)) and value(pg, MESSAGES, topic=OFFSETS)
                       > value(before, MESSAGES, topic=OFFSETS) and pg, 30, 0.5, what="the commit counted")
    assert value(after, MESSAGES, topic=OFFSETS) - value(before, MESSAGES, topic=OFFSETS) == 3, backend_name
    assert value(after, MESSAGES) - value(before, MESSAGES) == 3, backend_name
    assert value(after, REQUESTS, topic=OFFSETS) - value(before, REQUESTS, topic=OFFSETS) == 1, backend_name
