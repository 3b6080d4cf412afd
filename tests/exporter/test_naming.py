"""prometheus.naming: aliases are the shipped upstream rule files, ``rules:`` takes any jmx_exporter file, and
:func:`series_for` names an attribute as the recorded jmx_exporter output does."""

import re

import pytest
from prometheus_client.parser import text_string_to_metric_families

from broker.config import BrokerConfig, ConfigError
from exporter.naming import ALIASES, OWN_RULES, load, quantile_label, rules_path, safe_name, series_for
from tests.exporter.jmx_beans import beans, split_name
from tests.exporter.jmx_compare import reference_path


def test_aliases_are_the_upstream_files_with_their_source_named():
    assert set(ALIASES) == {"strimzi", "confluent"}
    for alias, repo in (("strimzi", "strimzi/strimzi-kafka-operator"), ("confluent", "confluentinc/jmx-monitoring-stacks")):
        head = ALIASES[alias].read_text().split("\n", 4)[:4]
        assert repo in " ".join(head) and re.search(r"commit [0-9a-f]{40}", " ".join(head)), alias
        assert load(alias).rules
    assert rules_path("rules:/etc/x.yml").as_posix() == "/etc/x.yml"
    for bad in ("graphite", "rules:", ""):
        with pytest.raises(ValueError):
            rules_path(bad)


def test_broker_key_accepts_a_rule_file_and_refuses_a_bad_one(tmp_path):
    good = tmp_path / "mine.yml"
    good.write_text("lowercaseOutputName: true\nrules:\n- pattern: kafka.server<type=(.+), name=(.+)><>Value\n"
                    "  name: mine_$1_$2\n")
    assert BrokerConfig.from_properties({"prometheus.naming": f"rules:{good}"}).prometheus_naming == f"rules:{good}"
    assert BrokerConfig.from_properties({"prometheus.naming": "confluent"}).prometheus_naming == "confluent"
    bad = tmp_path / "bad.yml"
    bad.write_text("rules:\n- name: x\n")
    for value in (f"rules:{bad}", f"rules:{tmp_path / 'missing.yml'}", "graphite"):
        with pytest.raises(ConfigError, match="prometheus.naming"):
            BrokerConfig.from_properties({"prometheus.naming": value})


def test_safe_name_and_quantile_labels():
    assert safe_name("socket-server-metrics") == "socket_server_metrics"
    assert safe_name("a--b__c") == "a_b_c" and safe_name("9lives") == "_9lives"
    assert quantile_label("999thPercentile") == "0.999" and quantile_label("50thPercentile") == "0.50"
    assert quantile_label("Mean") is None


@pytest.mark.parametrize("convention", ["strimzi", "confluent"])
def test_series_for_names_attributes_as_jmx_exporter(convention):
    recorded = {(s.name, frozenset(s.labels.items()))
                for fam in text_string_to_metric_families(reference_path(convention, "broker").read_text())
                for s in fam.samples}
    checked = 0
    for name, attr, v in beans("broker"):
        domain, props = split_name(name)
        if not domain.startswith("kafka."):
            continue
        s = series_for(domain, props[0][1], dict(props).get("name"),
                       tuple(p for p in props[1:] if p[0] != "name"), attr, convention, v)
        if s is None:
            continue
        sample = s.name + "_total" if s.type == "counter" else s.name
        labels = frozenset(s.labels)
        objectname = domain + "<" + ", ".join(f"{k}={x}" for k, x in props) + "><>" + attr
        assert (sample, labels) in recorded or (sample, labels | {("_objectname", objectname)}) in recorded, \
            (name, attr, s)
        checked += 1
    assert checked > 1000


def test_own_mbeans_fall_back_to_our_rules():
    assert OWN_RULES.is_file()
    for convention in ("strimzi", "confluent"):
        s = series_for("kafkascope.log", "LogDir", "FreeBytes", (("logDir", "/d"),), "Value", convention, 5)
        assert s is not None and s.name == "kafkascope_log_logdir_freebytes" and s.labels == (("logDir", "/d"),)


def test_a_broker_given_a_rule_file_we_do_not_ship_serves_its_names(tmp_path):
    """prometheus.naming=rules:<jmx_exporter's kafka-2_0_0.yml> on a real broker process: the names that file gives
    Kafka (its coordinator rule, Percent names without `_percent`) are on /metrics, Strimzi's are not."""
    import urllib.request

    from kafkascope.local.broker_process import BrokerProcess, free_port
    from tests.exporter.jmx_beans import RULE_FILES

    mport = free_port()
    props = {"prometheus.listener": f"127.0.0.1:{mport}", "prometheus.naming": f"rules:{RULE_FILES['kafka-2_0_0']}"}
    with BrokerProcess(tmp_path, **props):
        text = urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=10).read().decode()
    names = {f.name for f in text_string_to_metric_families(text)}
    assert {"kafka_coordinator_group_groupmetadatamanager_numgroups",
            "kafka_network_socketserver_networkprocessoravgidlepercent",
            "kafka_server_replicamanager_underreplicatedpartitions", "kafkascope_log_logdir_freebytes"} <= names
    assert "kafka_network_socketserver_networkprocessoravgidle_percent" not in names
