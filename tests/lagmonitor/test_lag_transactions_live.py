"""The lag monitor against our broker serving transactions (KIP-98): a caught-up read_committed group on a
transactional topic is OK, a group that stops is STOP (tests/scenarios/lag_transactions.py)."""

from __future__ import annotations

import pytest

from kafkascope.local.broker_process import BrokerProcess
from tests.e2e.test_transactions import TXN_PROPS
from tests.scenarios import lag_transactions
from tests.scenarios.lag import CONFIG, Running


@pytest.fixture
def txn_broker(tmp_path):
    b = BrokerProcess(tmp_path, **TXN_PROPS).start()
    yield b
    b.stop()


def test_caught_up_read_committed_group_is_ok_and_a_stopped_one_is_flagged(txn_broker):
    running = Running(txn_broker.bootstrap, CONFIG)
    try:
        lag_transactions.caught_up_read_committed_is_ok_and_stopped_is_flagged(txn_broker.bootstrap, running)
    finally:
        running.close()
