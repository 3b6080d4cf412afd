"""The first state znode of new partitions, written by the controller as a pipeline.

Kafka's controller creates them in one batch of asynchronous requests (PartitionStateMachine
.initializeLeaderAndIsrForPartitions, KafkaZkClient.createTopicPartitionStatesRaw). Ours took four synchronous
round trips per partition (read, two parent checks, the create), so creating 10,000 partitions kept the
controller busy for about two minutes. Here each step is sent for a window of partitions before any answer is
awaited; every write is still a multi-op fenced by the /controller_epoch version.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from broker.controller import election
from broker.controller import zk_paths as zp
from broker.controller.state import PartitionState

if TYPE_CHECKING:
    from broker.controller.controller import Controller

Missing = Sequence[tuple[str, int, Sequence[int]]]  # (topic, partition, replicas) without a cached state


def create_states(c: Controller, missing: Missing, live: set[int], window: int) -> int:
    """Read, else create, the state znode of each partition in `missing`; returns how many already existed
    (now cached: the caller reconciles them on its next pass). Raises the controller's Fenced."""
    found = 0
    for i in range(0, len(missing), window):
        found += _create_window(c, missing[i:i + window], live)
    return found


def _create_window(c: Controller, missing: Missing, live: set[int]) -> int:
    zk, cache = c.zk, c.cache
    started = time.monotonic()
    reads = [(t, p, r, zk.get_async(zp.state_path(t, p))) for t, p, r in missing]
    absent, found = [], 0
    for t, p, replicas, result in reads:
        try:
            data, stat = result.get()
        except NoNodeError:
            absent.append((t, p, replicas))
            continue
        a = cache.assignment(t)
        if a is not None:  # written by an earlier controller: cache it (refresh_state's job, pipelined)
            cache.put_state(t, p, zp.decode_state(data, a.partitions.get(p, ()), stat.version), topic_id=a.topic_id)
            found += 1
    topics = {t for t, _, _ in absent}
    parents = {t: zk.exists_async(zp.partitions_path(t)) for t in topics}
    _create_parents(c, [t for t, r in parents.items() if r.get() is None])
    partition_nodes = [(t, p, r, zk.exists_async(zp.partition_path(t, p))) for t, p, r in absent]
    writes: list[tuple[str, int, PartitionState, Any]] = []
    for t, p, replicas, exists in partition_nodes:
        d = election.initial(replicas, live)
        has_parent = exists.get() is not None
        if d is None:
            continue
        s = PartitionState(replicas=tuple(replicas), leader=d.leader, leader_epoch=0, isr=d.isr,
                           controller_epoch=c.epoch, version=0)
        tx = zk.transaction()
        tx.check(zp.CONTROLLER_EPOCH, c.epoch_zk_version)
        if not has_parent:
            tx.create(zp.partition_path(t, p), b"")
        tx.create(zp.state_path(t, p), zp.encode_state(s))
        writes.append((t, p, s, tx.commit_async()))
    fenced = False
    for t, p, s, result in writes:
        res = result.get()
        if isinstance(res[0], (BadVersionError, NoNodeError)):
            fenced = True
        elif any(isinstance(r, NoNodeError) for r in res[1:]):
            continue  # the topic went away
        elif any(isinstance(r, NodeExistsError) for r in res[1:]):
            found += 1  # someone else created it: the watch brings it
        elif isinstance(res[-1], Exception):
            raise res[-1]
        else:
            cache.put_state(t, p, s)
            c._elected(started)
    if fenced:
        raise c.fenced()
    return found


def _create_parents(c: Controller, topics: list[str]) -> None:
    """`/brokers/topics/<t>/partitions` of each topic, once (a partition's own multi-op cannot create it: two
    partitions of one topic would both try)."""
    results = []
    for t in topics:
        tx = c.zk.transaction()
        tx.check(zp.CONTROLLER_EPOCH, c.epoch_zk_version)
        tx.create(zp.partitions_path(t), b"")
        results.append(tx.commit_async())
    for result in results:
        res = result.get()
        if isinstance(res[0], (BadVersionError, NoNodeError)):
            raise c.fenced()
