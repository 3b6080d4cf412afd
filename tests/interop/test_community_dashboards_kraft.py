"""The held-out check of test_community_dashboards.py with Apache Kafka 4.1.1 in KRaft mode as the reference.

Issue 18: the community dashboards and alerts, unchanged, same traffic and fault (a paused broker) on both backends,
pass on a KRaft cluster "where the metric exists in both modes". The reference is three combined broker+controller
nodes of Kafka 4.1.1 (kafkascope.local.kraft, static quorum), each with the jmx_exporter 1.0.1 agent given the
upstream rule file (Strimzi's kafka-metrics.yaml, then Confluent's kafka_broker.yml); ours runs as always, three
brokers in ZooKeeper mode under the same naming. The paused broker is not the Raft quorum leader (the active
controller), so the quorum keeps its leader while two of three voters answer.

Dashboards: those of the ZooKeeper-mode check, plus Strimzi's KRaft dashboard (strimzi-kraft.json), which an
on-call engineer of a Strimzi KRaft cluster opens next to strimzi-kafka.json. jmx-monitoring-stacks' KRaft
dashboards are not used: they read the controllers through a separate `kafka-controller` job under Confluent's
controller rules (kafka_controller.yml), a scrape set-up of separate controller processes with its own naming.

Asserted per naming (held_out's checks, with this module's lists):
* every query with data on Kafka 4.1 has data on ours, except those KRAFT_ONLY names, and each KRAFT_ONLY entry
  names a query with data on Kafka and none with data on ours (so the list cannot rot);
* every query with data on ours and not on Kafka 4.1 is explained: ZK_ONLY (ZooKeeper-mode names; each entry must
  name a query with data on ours and none on Kafka) or held_out.OURS_ONLY (differences that are not about the mode);
* held_out.OUT_OF_SCOPE queries have no data on Kafka 4.1 either;
* the fault-driven panels and alerts agree, and the per-topic message rates are within 5%.
About 16 minutes (four cluster runs one after the other); pytest -s prints the coverage table and every query
without data on both.
"""

from __future__ import annotations

import shutil

import pytest

from tests.interop import community_queries as cq
from tests.interop import held_out as ho
from tests.interop.conftest import apache_kafka_or_skip

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200),
              pytest.mark.skipif(shutil.which("prometheus") is None, reason="Debian package `prometheus` missing")]

KAFKA_VERSION = "4.1.1"
STRIMZI_KRAFT = cq.Dashboard("strimzi", cq.DATA / "strimzi" / "strimzi-kraft.json")
KRAFT_REFERENCE = ho.Reference(
    KAFKA_VERSION,
    {"strimzi": [*cq.STRIMZI_DASHBOARDS, STRIMZI_KRAFT], "confluent": cq.CONFLUENT_DASHBOARDS},
    {"strimzi": cq.STRIMZI_RULES, "confluent": cq.CONFLUENT_RULES})

# Queries with data on Kafka 4.1 (KRaft) that a ZooKeeper-mode broker, ours included, cannot have, by naming; each
# entry must name a query with data on Kafka and none with data on ours. Patterns are searched in
# "<source> <expression>". (Confluent's ZooKeeper-era dashboards have no KRaft-only query.)
KRAFT_ONLY: dict[str, tuple[tuple[str, str], ...]] = {"confluent": (), "strimzi": (
    (r"kafka_server_raftmetrics_",
     "raft-metrics (kafka.server:type=raft-metrics, KIP-595): the __cluster_metadata quorum's state, leader, vote, "
     "epoch, high watermark, log end offset, commit latency, append/fetch record rates; no Raft log in ZooKeeper "
     "mode"),
    (r"kafka_server_raftchannelmetrics_",
     "raft-channel-metrics: the network client of the Raft protocol between controllers and brokers (KRaft only)"),
    (r"^strimzi-kraft\.json ",
     "strimzi-kraft.json reads its namespace, cluster and node variables from kafka_server_raftmetrics_current_leader "
     "(query_result), so on a ZooKeeper-mode cluster even its JVM and process panels select no target"),
)}

# Queries with data on ours (ZooKeeper mode) and none on Kafka 4.1 (KRaft), because the name is ZooKeeper mode's, by
# naming; each entry must name a query with data on ours and none with data on Kafka. (Strimzi's broker dashboard
# has no ZooKeeper panel.)
ZK_ONLY: dict[str, tuple[tuple[str, str], ...]] = {"strimzi": (), "confluent": (
    (r"kafka_server_sessionexpirelistener_",
     "the broker's ZooKeeper session events (kafka.server:type=SessionExpireListener): a KRaft node has no "
     "ZooKeeper session"),
    (r"kafka_server_zookeeperclientmetrics_",
     "ZooKeeper request latency (kafka.server:type=ZooKeeperClientMetrics): a KRaft node has no ZooKeeper client"),
)}

# Fault panels that sum a cluster-wide gauge over the nodes: every KRaft controller computes
# kafka.controller:type=KafkaController's OfflinePartitionsCount from the metadata log (ControllerMetadataMetricsPublisher),
# not only the active one as in ZooKeeper mode, so with one of three combined nodes paused the panel shows the
# offline partitions twice. Compared per reporting node.
KAFKA_REPORTERS = {ho.OFFLINE_TITLE: 2}

# Queries with data on Kafka 4.1 but none on ours that are not about the mode, accepted for now.
KNOWN_GAPS: dict[tuple[str, str], str] = {}


def explanations(naming: str) -> ho.Explanations:
    return ho.Explanations(out_of_scope=ho.Listed(tuple(ho.OUT_OF_SCOPE)),
                           ours_only=ho.Listed((*ZK_ONLY[naming], *ho.OURS_ONLY)),
                           kafka_only=ho.Listed(KRAFT_ONLY[naming]), known_gaps=KNOWN_GAPS)


@pytest.fixture(scope="module", params=["strimzi", "confluent"])
def runs(request, tmp_path_factory) -> dict[str, ho.RunResult]:
    apache_kafka_or_skip(KAFKA_VERSION)
    apache_kafka_or_skip()  # the jmx_exporter agent comes with the ZooKeeper-mode line (kafka_dist)
    naming = request.param
    return ho.run_pair(naming, tmp_path_factory.mktemp(f"community-kraft-{naming}"), KRAFT_REFERENCE,
                       explanations(naming))


def test_queries_with_data_on_kafka_41_have_data_on_ours_except_kraft_only(runs):
    ours, kafka = runs["kafkascope"], runs["apache-kafka"]
    errors = ho.rejected(ours, kafka)
    assert not errors, "queries Prometheus rejects:\n" + "\n".join(errors)
    gaps, closed = ho.missing_on_ours(ours, kafka, explanations(kafka.naming))
    assert not gaps, "queries with data on Kafka 4.1 (KRaft) but none on ours:\n" + "\n".join(gaps)
    assert not closed, "known gaps that now have data on ours:\n" + "\n".join(closed)


def test_kraft_only_list_names_queries_with_data_on_kafka_only(runs):
    kafka = runs["apache-kafka"]
    stale = ho.stale_entries(ho.Listed(KRAFT_ONLY[kafka.naming]), has=kafka, lacks=runs["kafkascope"])
    assert not stale, "KRAFT_ONLY is out of date:\n" + "\n".join(stale)


def test_queries_with_data_only_on_ours_are_explained(runs):
    ours, kafka = runs["kafkascope"], runs["apache-kafka"]
    extra = ho.unexplained_ours_only(ours, kafka, explanations(kafka.naming))
    assert not extra, "queries with data on ours but none on Kafka 4.1 (KRaft):\n" + "\n".join(extra)


def test_zk_only_list_names_queries_with_data_on_ours_only(runs):
    ours = runs["kafkascope"]
    stale = ho.stale_entries(ho.Listed(ZK_ONLY[ours.naming]), has=ours, lacks=runs["apache-kafka"])
    assert not stale, "ZK_ONLY is out of date:\n" + "\n".join(stale)


def test_out_of_scope_queries_have_no_data_on_kafka_41_either(runs):
    kafka = runs["apache-kafka"]
    wrong = ho.out_of_scope_with_data(kafka, explanations(kafka.naming))
    assert not wrong, "listed as out of scope but with data on Kafka 4.1:\n" + "\n".join(wrong)


def test_fault_driven_panels_and_alerts_agree(runs):
    ho.check_fault_panels_and_alerts(runs, kafka_reporters=KAFKA_REPORTERS)


def test_per_topic_message_rates_within_5_percent(runs):
    problems = ho.rate_problems(runs["kafkascope"], runs["apache-kafka"])
    assert not problems, "per-topic messages-in rates differ by more than 5%:\n" + "\n".join(problems)
