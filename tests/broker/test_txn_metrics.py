"""Transaction metrics of a broker of ours in this process, read as MBeans: kafka.server:type=
transaction-coordinator-metrics partition-load-time-max/-avg, and kafka.cluster:type=Partition
LastStableOffsetLag (HW - LSO on the leader) while a transaction is open and after it ends."""

from __future__ import annotations

import asyncio
import math

from broker.log.records import Record, build_batch
from common.clock import ManualClock
from common.polling import wait_until
from exporter.registry import SampledMaxAvg
from kafkascope.local.wire import WireClient
from tests.broker.inproc import inproc_broker, metric
from tests.e2e.helpers import create_topic

TCM = ("kafka.server", "transaction-coordinator-metrics")


def test_sampled_max_avg_forgets_old_windows():
    clock = ManualClock()
    s = SampledMaxAvg(clock)
    assert math.isnan(s.max) and math.isnan(s.avg)
    s.record(10)
    s.record(30)
    assert (s.max, s.avg) == (30, 20)
    clock.advance(61_000)  # older than 2 x 30 s
    s.record(4)
    assert (s.max, s.avg) == (4, 4)


async def test_load_time_and_lso_lag(tmp_path):
    async with inproc_broker(tmp_path, **{"transaction.state.log.num.partitions": 3}) as (b, port):
        assert math.isnan(metric(b, *TCM, "partition-load-time-max").read())

        def traffic() -> None:
            create_topic(port, "t", 1)
            with WireClient(port) as w:  # a transactional client's first request creates __transaction_state
                w.call(10, 4, {"key_type": 1, "coordinator_keys": ["app"]})
        await asyncio.to_thread(traffic)
        assert metric(b, *TCM, "partition-load-time-max").read() >= 0
        assert metric(b, *TCM, "partition-load-time-avg").read() >= 0
        family = metric(b, "kafka.cluster", "Partition", "LastStableOffsetLag")

        def lag() -> float:
            return {(dict(tags)["topic"], dict(tags)["partition"]): v for tags, v in family.fn()}[("t", "0")]

        assert lag() == 0
        plog = b.replicas.leader_log("t", 0)
        plog.append_as_leader(build_batch([Record(timestamp=1, value=b"x")] * 3, producer_id=5, producer_epoch=0,
                                          base_sequence=0, is_transactional=True), 0)
        # HW 3, LSO 0: the open transaction holds it back (the gauges read states cached for 0.5 s)
        await asyncio.to_thread(wait_until, lambda: lag() == 3, 5, what="LastStableOffsetLag 3")
        b.replicas.append_marker("t", 0, 5, 0, 0, commit=True)
        await asyncio.to_thread(wait_until, lambda: lag() == 0, 5, what="LastStableOffsetLag 0")
