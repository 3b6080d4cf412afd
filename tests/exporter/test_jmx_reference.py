"""Live proof against the real jmx_exporter: the MBeans of a broker of ours are registered in a JVM running the
jmx_prometheus_javaagent 1.0.1 (what our reference Apache Kafka runs with) under a rule file, and its page must
equal the one our engine makes of the same MBeans and values (families, types, labels, values, help).

The quick test runs one JVM (Strimzi's rules, a fresh broker's MBeans); the slow one every rule file on every bean
set and Java's own answers to the regex cases. Skipped without java/javac or the agent jar.
"""

from __future__ import annotations

import pytest

from tests.exporter import jmx_regex_cases
from tests.exporter.jmx_beans import BEAN_SETS, RULE_FILES, beans, broker_beans, rules_text
from tests.exporter.jmx_compare import differences, ours
from tests.support.jmx_reference import ReferenceUnavailable, agent_jar, java_regex, scrape_agent


@pytest.fixture(scope="module")
def agent():
    try:
        return agent_jar()
    except ReferenceUnavailable as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def fresh_broker_beans():
    return broker_beans()


def _compare(bs, rules: str, workdir) -> list[str]:
    return differences(ours(bs, rules), scrape_agent(bs, rules_text(rules), workdir))


def test_strimzi_page_of_a_fresh_broker_equals_jmx_exporters(agent, fresh_broker_beans, tmp_path):
    diff = _compare(fresh_broker_beans, "strimzi", tmp_path)
    assert not diff, "\n".join(diff[:40])


@pytest.mark.slow
@pytest.mark.parametrize("rules", list(RULE_FILES))
def test_every_rule_file_on_every_bean_set_equals_jmx_exporter(agent, fresh_broker_beans, rules, tmp_path):
    for name, bs in (("fresh broker", fresh_broker_beans), *((s, beans(s)) for s in BEAN_SETS)):
        diff = _compare(bs, rules, tmp_path / name.replace(" ", "-"))
        assert not diff, f"{rules} on {name} MBeans:\n" + "\n".join(diff[:40])


@pytest.mark.slow
def test_java_answers_the_regex_cases_as_recorded(agent, tmp_path):
    live = java_regex(jmx_regex_cases.CASES, tmp_path)
    assert [r for _, _, r in jmx_regex_cases.recorded()] == live
