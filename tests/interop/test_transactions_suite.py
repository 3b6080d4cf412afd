"""The suite around transactions on Apache Kafka (slow): `kafkascope transactions` list / describe /
describe-producers and console-consumer --isolation-level read the same tables from Kafka's own coordinator, and
the lag monitor calls a caught-up read_committed group OK and a stopped one STOP (tests/scenarios/
lag_transactions.py), as on our broker (tests/cli/test_transactions.py, tests/lagmonitor/
test_lag_transactions_live.py)."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient

from kafkascope.cli import main
from kafkascope.local.apache_kafka import DEFAULT_VERSION, ApacheKafka
from tests.cli.test_transactions import list_describe_and_describe_producers, opened
from tests.e2e.test_transactions import TXN_PROPS
from tests.interop.conftest import apache_kafka_or_skip
from tests.scenarios import lag_transactions
from tests.scenarios.lag import CONFIG, Running

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def kafka():
    apache_kafka_or_skip(DEFAULT_VERSION)
    with ApacheKafka(version=DEFAULT_VERSION, extra_props=TXN_PROPS, log_level="WARN") as k:
        yield k


def test_transactions_cli_on_apache_kafka(kafka, capsys):
    def cli(command: str, *args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main([command, "--bootstrap-server", kafka.bootstrap, *args])
        out, err = capsys.readouterr()
        return code, out, err

    node = str(next(iter(AdminClient({"bootstrap.servers": kafka.bootstrap}).list_topics(timeout=10).brokers)))
    with opened(kafka.bootstrap) as (topic, tid):
        list_describe_and_describe_producers(cli, topic, tid, coordinator=node)
        args = ("console-consumer", "--topic", topic, "--from-beginning", "--timeout-ms", "3000")
        assert cli(*args, "--isolation-level", "read_committed")[:2] == (0, "c1\nc2\n")
        assert cli(*args)[:2] == (0, "c1\nc2\na1\na2\nopen\n")


def test_lag_monitor_on_a_transactional_topic_of_apache_kafka(kafka):
    running = Running(kafka.bootstrap, CONFIG)
    try:
        lag_transactions.caught_up_read_committed_is_ok_and_stopped_is_flagged(kafka.bootstrap, running)
    finally:
        running.close()
