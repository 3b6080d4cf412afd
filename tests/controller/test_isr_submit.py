"""ZkMetadata.submit_isr_update against a real ZooKeeper: the leader's conditional ISR write is sent without the
event loop waiting for it (issue 20: a round trip per partition on the loop made ISRs flap at 10,000 partitions);
its answer arrives on the loop."""

from __future__ import annotations

import asyncio

from broker.controller.state import NO_LEADER
from common.polling import wait_until


def _online(node, topic: str) -> None:
    wait_until(lambda: (s := node.partition_state(topic, 0)) is not None and s.leader != NO_LEADER, 10, 0.02,
               what=f"{topic} online")


def test_the_write_is_answered_on_the_loop_after_submit_returned(cluster):
    for b in (1, 2, 3):
        cluster.start(b)
    n1 = cluster.nodes[1]
    n1.create_topic("isr", 1, 3, {})
    _online(n1, "isr")
    s = n1.partition_state("isr", 0)

    async def submit(current, isr):
        fut = asyncio.get_running_loop().create_future()
        n1.submit_isr_update("isr", 0, current, isr,
                             lambda new: fut.set_result((new, asyncio.get_running_loop() is not None)))
        pending_at_return = not fut.done()
        new, on_loop = await asyncio.wait_for(fut, 10)
        return pending_at_return, new, on_loop

    pending, first, on_loop = cluster.run(submit(s, s.isr[:2]))
    assert pending and on_loop  # submit did not wait for ZooKeeper; the answer ran on the loop
    assert first is not None and first.isr == s.isr[:2] and first.version == s.version + 1
    assert n1.partition_state("isr", 0).version == first.version  # cached for this broker at once
    _, stale, _ = cluster.run(submit(s, s.isr[:1]))  # stale: refused
    assert stale is None
