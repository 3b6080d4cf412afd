"""Naming rules against jmx_exporter's documented behaviour (kafka_metrics.md §1-§3)."""

import pytest

from exporter.naming import CONFLUENT, STRIMZI, Series, quantile_label, safe_name, series_for


def s(domain, type_, name, attr, conv=STRIMZI, **tags):
    return series_for(domain, type_, name, tuple(tags.items()), attr, conv)


def test_safe_name_and_quantile_labels():
    assert safe_name("socket-server-metrics") == "socket_server_metrics"
    assert safe_name("a--b__c") == "a_b_c"
    assert [quantile_label(a) for a in ("50thPercentile", "75thPercentile", "95thPercentile", "98thPercentile",
                                         "99thPercentile", "999thPercentile")] == \
        ["0.50", "0.75", "0.95", "0.98", "0.99", "0.999"]
    assert quantile_label("Mean") is None


@pytest.mark.parametrize(("args", "tags", "expected"), [
    (("kafka.server", "ReplicaManager", "UnderReplicatedPartitions", "Value"), {},
     Series("kafka_server_replicamanager_underreplicatedpartitions", (), "gauge")),
    (("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec", "Count"), {"topic": "orders"},
     Series("kafka_server_brokertopicmetrics_messagesin", (("topic", "orders"),), "counter")),
    (("kafka.server", "BrokerTopicMetrics", "BytesInPerSec", "Count"), {},
     Series("kafka_server_brokertopicmetrics_bytesin", (), "counter")),
    (("kafka.network", "RequestMetrics", "TotalTimeMs", "99thPercentile"), {"request": "Produce"},
     Series("kafka_network_requestmetrics_totaltimems", (("request", "Produce"), ("quantile", "0.99")), "gauge")),
    (("kafka.network", "RequestMetrics", "TotalTimeMs", "Count"), {"request": "Produce"},
     Series("kafka_network_requestmetrics_totaltimems_count", (("request", "Produce"),), "counter")),
    (("kafka.network", "RequestMetrics", "RequestsPerSec", "Count"), {"request": "Produce", "version": "9"},
     Series("kafka_network_requestmetrics_requests", (("request", "Produce"), ("version", "9")), "counter")),
    (("kafka.network", "RequestMetrics", "ErrorsPerSec", "Count"), {"request": "Produce", "error": "NONE"},
     Series("kafka_network_requestmetrics_errors", (("request", "Produce"), ("error", "NONE")), "counter")),
    (("kafka.network", "SocketServer", "NetworkProcessorAvgIdlePercent", "Value"), {},
     Series("kafka_network_socketserver_networkprocessoravgidle_percent", (), "gauge")),
    (("kafka.server", "KafkaRequestHandlerPool", "RequestHandlerAvgIdlePercent", "MeanRate"), {},
     Series("kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent", (), "gauge")),
    (("kafka.server", "KafkaRequestHandlerPool", "RequestHandlerAvgIdlePercent", "Count"), {},
     Series("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count", (), "counter")),
    (("kafka.server", "DelayedOperationPurgatory", "PurgatorySize", "Value"), {"delayedOperation": "Produce"},
     Series("kafka_server_delayedoperationpurgatory_purgatorysize", (("delayedOperation", "Produce"),), "gauge")),
    (("kafka.log", "Log", "Size", "Value"), {"topic": "t", "partition": "0"},
     Series("kafka_log_log_size", (("topic", "t"), ("partition", "0")), "gauge")),
    (("kafka.controller", "ControllerStats", "UncleanLeaderElectionsPerSec", "Count"), {},
     Series("kafka_controller_controllerstats_uncleanleaderelections", (), "counter")),
    (("kafka.server", "ReplicaManager", "IsrShrinksPerSec", "Count"), {},
     Series("kafka_server_replicamanager_isrshrinks", (), "counter")),
    (("kafka.server", "KafkaServer", "linux-disk-read-bytes", "Value"), {},
     Series("kafka_server_kafkaserver_linux_disk_read_bytes", (), "gauge")),
    (("kafka.coordinator.group", "GroupMetadataManager", "NumGroupsStable", "Value"), {},
     Series("kafka_coordinator_group_groupmetadatamanager_numgroupsstable", (), "gauge")),
    (("kafka.server", "socket-server-metrics", None, "connection-count"),
     {"listener": "PLAINTEXT", "networkProcessor": "0"},
     Series("kafka_server_socket_server_metrics_connection_count",
            (("listener", "PLAINTEXT"), ("networkProcessor", "0")), "gauge")),
    (("kafka.server", "socket-server-metrics", None, "connection-creation-total"),
     {"listener": "PLAINTEXT", "networkProcessor": "0"},
     Series("kafka_server_socket_server_metrics_connection_creation_total",
            (("listener", "PLAINTEXT"), ("networkProcessor", "0")), "counter")),
])
def test_strimzi(args, tags, expected):
    assert s(*args, **tags) == expected


@pytest.mark.parametrize("attr", ["MeanRate", "OneMinuteRate", "Min", "Max", "Mean", "StdDev"])
def test_strimzi_does_not_export_rates_or_moments(attr):
    assert s("kafka.network", "RequestMetrics", "TotalTimeMs", attr, request="Produce") is None
    assert s("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec", attr) is None


def test_strimzi_drops_dotted_domains_other_than_coordinator_gauges():
    assert s("kafka.log.remote", "RemoteLogManager", "X", "Value") is None


@pytest.mark.parametrize(("args", "tags", "expected"), [
    (("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec", "Count"), {"topic": "t"},
     Series("kafka_server_brokertopicmetrics_messagesinpersec", (("topic", "t"),), "untyped")),
    (("kafka.network", "RequestMetrics", "RequestsPerSec", "Count"), {"request": "Fetch", "version": "11"},
     Series("kafka_network_requestmetrics_requestspersec", (("request", "Fetch"), ("version", "11")), "untyped")),
    (("kafka.network", "RequestMetrics", "TotalTimeMs", "Count"), {"request": "Produce"},
     Series("kafka_network_requestmetrics_totaltimems", (("request", "Produce"),), "untyped")),
    (("kafka.network", "RequestMetrics", "TotalTimeMs", "999thPercentile"), {"request": "Produce"},
     Series("kafka_network_requestmetrics_totaltimems", (("request", "Produce"), ("quantile", "0.999")), "untyped")),
    (("kafka.network", "SocketServer", "NetworkProcessorAvgIdlePercent", "Value"), {},
     Series("kafka_network_socketserver_networkprocessoravgidlepercent", (), "untyped")),
    (("kafka.server", "KafkaRequestHandlerPool", "RequestHandlerAvgIdlePercent", "OneMinuteRate"), {},
     Series("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_oneminuterate", (), "untyped")),
    (("kafka.server", "DelayedOperationPurgatory", "PurgatorySize", "Value"), {"delayedOperation": "Fetch"},
     Series("kafka_server_delayedoperationpurgatory_purgatorysize", (("delayedoperation", "Fetch"),), "untyped")),
    (("kafka.server", "socket-server-metrics", None, "connection-count"),
     {"listener": "PLAINTEXT", "networkProcessor": "0"},
     Series("kafka_server_socketservermetrics_connection_count",
            (("listener", "PLAINTEXT"), ("network_processor", "0")), "untyped")),
    (("kafka.server", "BrokerTopicMetrics", "BytesInPerSec", "OneMinuteRate"), {},
     Series("kafka_server_brokertopicmetrics_bytesinpersec_oneminuterate_alltopics", (), "untyped")),
    (("kafka.server", "ReplicaManager", "IsrShrinksPerSec", "Count"), {},
     Series("kafka_server_replicamanager_isrshrinkspersec", (), "untyped")),
    (("kafka.controller", "ControllerStats", "UncleanLeaderElectionsPerSec", "Count"), {},
     Series("kafka_controller_controllerstats_uncleanleaderelectionspersec", (), "untyped")),
])
def test_confluent(args, tags, expected):
    assert s(*args[:3], args[3], CONFLUENT, **tags) == expected


def test_unknown_convention_is_an_error():
    with pytest.raises(ValueError):
        series_for("kafka.server", "ReplicaManager", "LeaderCount", (), "Value", "graphite")
