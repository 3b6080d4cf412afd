"""Many partition state writes at once, for the controller (failover, controlled shutdown, rebalance,
ElectLeaders): conditional writes grouped into ZooKeeper multi-ops of `BATCH` partitions, each multi-op fenced by
the /controller_epoch version check, and all of them sent before the first answer is awaited.

Kafka's controller pipelines one asynchronous request per partition (KafkaZkClient.updateLeaderAndIsr); with
kazoo each request costs ~130 µs of Python on the client, so 3,000 pipelined requests took 0.4 s, and multi-ops of
100 writes 0.03 s (same ZooKeeper, quiet machine). One synchronous round trip per partition, what the controller
did before, made the failover of 1,000 leaders take 23 s.

A multi-op is atomic: one partition whose state moved underneath (a leader changed its ISR) fails the whole batch.
ZooKeeper names the failing op; the others (rolled back) are sent again in the next round, and the failed ones go
through the controller's one-partition path (re-read, decide again, retry).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kazoo.exceptions import BadVersionError, NoNodeError, RolledBackError, RuntimeInconsistency

from broker.controller import zk_paths as zp
from broker.controller.state import PartitionState
from broker.controller.watches import refresh_state

if TYPE_CHECKING:
    from broker.controller.controller import Controller, Decide

BATCH = 100  # partitions per multi-op (~15 KB: well under ZooKeeper's jute.maxbuffer of 1 MB)
IN_FLIGHT = 10  # multi-ops sent before the first answer is awaited
ROUNDS = 5  # re-sends of writes rolled back by another partition's failure in their batch

Item = tuple[str, int, "Decide"]


def write_states(c: Controller, items: Iterable[Item]) -> dict[tuple[str, int], PartitionState]:
    """Apply each item's `decide` to its partition's cached state and write the result; the states written."""
    started = time.monotonic()
    out: dict[tuple[str, int], PartitionState] = {}
    lost: list[Item] = []
    todo = list(items)
    for _ in range(ROUNDS):
        if not todo:
            break
        again: list[Item] = []
        inflight: list[tuple[list, Any]] = []
        for i in range(0, len(todo), BATCH):
            batch = [(t, p, d, planned) for t, p, d in todo[i:i + BATCH]
                     if (planned := c._plan(t, p, d)) is not None]
            if batch:
                inflight.append((batch, _send(c, batch)))
            if len(inflight) >= IN_FLIGHT:
                _collect(c, inflight, out, again, lost, started)
        _collect(c, inflight, out, again, lost, started)
        todo = again
    for t, p, decide in lost + todo:
        refresh_state(c.zk, c.cache, t, p)
        written = c._write_state(t, p, decide)
        if written is not None:
            out[(t, p)] = written
    return out


def _send(c: Controller, batch: list) -> Any:
    tx = c.zk.transaction()
    tx.check(zp.CONTROLLER_EPOCH, c.epoch_zk_version)
    for t, p, _, planned in batch:
        new = planned[1]
        tx.set_data(zp.state_path(t, p), zp.encode_state(new), version=new.version)
    return tx.commit_async()


def _collect(c: Controller, inflight: list[tuple[list, Any]], out: dict, again: list[Item], lost: list[Item],
             started: float) -> None:
    """Await the multi-ops sent; raises the controller's Fenced after them all if the epoch check failed."""
    fenced = False
    for batch, result in inflight:
        res = result.get()
        if isinstance(res[0], (BadVersionError, NoNodeError)):
            fenced = True
            continue
        failed = isinstance(res[0], Exception) or any(isinstance(r, Exception) for r in res[1:])
        for (t, p, decide, planned), r in zip(batch, res[1:], strict=True):
            if not failed:
                out[(t, p)] = c._written(t, p, planned, r.version, started)
            elif isinstance(r, RolledBackError | RuntimeInconsistency) or not isinstance(r, Exception):
                again.append((t, p, decide))  # ZooKeeper's answer for the ops before / after the failed one
            else:
                lost.append((t, p, decide))
    inflight.clear()
    if fenced:
        raise c.fenced()
