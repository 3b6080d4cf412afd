"""Starting and cancelling partition reassignments (KIP-455): any broker writes the topic znode's adding and
removing replicas; the controller completes a reassignment once the new replicas are in the ISR.

Used by AlterPartitionReassignments (ZkMetadata) and by the controller for the legacy
/admin/reassign_partitions znode.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError

from broker.controller import zk_paths as zp
from broker.controller.assignment import validate_manual_assignment
from broker.controller.cache import MetadataCache
from broker.controller.watches import refresh_topic
from broker.errors import ErrorCode, KafkaError
from broker.metadata import PartitionResults

if TYPE_CHECKING:
    from broker.controller.controller import Controller

log = logging.getLogger(__name__)

Targets = Mapping[int, Sequence[int] | None]


def plan(a: zp.TopicAssignment, t: str, parts: Targets, live: set[int]
         ) -> tuple[zp.TopicAssignment, dict[int, tuple[ErrorCode, str | None]]]:
    """The topic's assignment with `parts` started (target replicas) or cancelled (None), and each
    partition's result. Pure."""
    pending: dict[int, tuple[ErrorCode, str | None]] = {}
    full, adding, removing = dict(a.partitions), dict(a.adding), dict(a.removing)
    for p, target in parts.items():
        if p not in a.partitions:
            pending[p] = (ErrorCode.unknown_topic_or_partition, None)
        elif target is None:
            if not a.reassigning(p):
                pending[p] = (ErrorCode.no_reassignment_in_progress, None)
                continue
            full[p] = a.origin(p)  # Kafka reverts to the full set minus the adding replicas
            adding.pop(p, None)
            removing.pop(p, None)
            pending[p] = (ErrorCode.none, None)
        else:
            target = tuple(int(r) for r in target)
            try:
                validate_manual_assignment({p: target}, live)
            except KafkaError as e:
                pending[p] = (e.code, e.message)
                continue
            if a.reassigning(p):
                pending[p] = (ErrorCode.reassignment_in_progress, f"Partition {t}-{p} is already being reassigned.")
                continue
            pending[p] = (ErrorCode.none, None)
            if target == a.partitions[p]:
                continue
            orig = a.partitions[p]
            full[p] = tuple(dict.fromkeys(target + orig))  # phase A: replicate to the union
            adding[p] = tuple(r for r in target if r not in orig)
            removing[p] = tuple(r for r in orig if r not in target)
    return replace(a, partitions=full, adding=adding, removing=removing), pending


def _alter_topic(zk: KazooClient, cache: MetadataCache, t: str, parts: Targets, live: set[int]
                 ) -> dict[int, tuple[ErrorCode, str | None]]:
    """One topic's reassignments with a conditional write of its znode (retried when it moved)."""
    for _ in range(5):
        a = refresh_topic(zk, cache, t)
        if a is None:
            return {p: (ErrorCode.unknown_topic_or_partition, None) for p in parts}
        new, pending = plan(a, t, parts, live)
        if new == a:
            return pending
        try:
            stat = zk.set(zp.topic_path(t), zp.encode_topic(new), version=a.version)
        except BadVersionError:
            continue
        except NoNodeError:   # deleted since it was read (found by fuzzing: the handler failed, the connection closed)
            return {p: (ErrorCode.unknown_topic_or_partition, None) for p in parts}
        cache.put_assignment(t, replace(new, version=stat.version))
        return pending
    return {p: (ErrorCode.unknown_server_error, "concurrent topic changes; retry") for p in parts}


def alter_reassignments(zk: KazooClient, cache: MetadataCache,
                        targets: Mapping[tuple[str, int], Sequence[int] | None],
                        allow_replication_factor_change: bool = True) -> PartitionResults:
    """AlterPartitionReassignments: per partition, start (replicas) or cancel (None) a reassignment."""
    results: PartitionResults = {}
    by_topic: dict[str, dict[int, Sequence[int] | None]] = {}
    for (t, p), r in targets.items():
        a = cache.assignment(t)
        if (not allow_replication_factor_change and r is not None and a is not None
                and cache.partition_state(t, p) is not None and len(r) != len(a.target(p))):
            results[(t, p)] = (ErrorCode.invalid_replication_factor,
                               f"The replication factor is changed from {len(a.target(p))} to {len(r)}")
        else:
            by_topic.setdefault(t, {})[p] = r
    live = cache.live_broker_ids()
    for t, parts in by_topic.items():
        for p, result in _alter_topic(zk, cache, t, parts, live).items():
            results[(t, p)] = result
    return results


def process_legacy_reassignment(c: Controller, live: set[int]) -> None:
    """/admin/reassign_partitions (kafka-reassign-partitions with --zookeeper): start each listed
    partition (skipping one already moving); delete the znode once all are done."""
    zk = c.zk
    try:
        data, stat = zk.get(zp.REASSIGN_PARTITIONS)
    except NoNodeError:
        return
    try:
        wanted = zp.decode_reassignment(data)
    except (ValueError, KeyError):
        log.warning("controller %d: unreadable %s deleted", c.me, zp.REASSIGN_PARTITIONS)
        c._commit(lambda tx: tx.delete(zp.REASSIGN_PARTITIONS, version=stat.version))
        return
    pending = {}
    start: dict[tuple[str, int], tuple[int, ...]] = {}
    for (t, p), target in wanted.items():
        a = c.cache.assignment(t)
        if a is None or p not in a.partitions or not target or not set(target) <= live:
            log.warning("controller %d: reassignment of %s-%d to %s ignored", c.me, t, p, list(target))
            continue
        if a.reassigning(p):
            if a.target(p) == target:
                pending[(t, p)] = target
            else:
                log.warning("controller %d: %s-%d is already being reassigned; %s ignored", c.me, t, p,
                            list(target))
            continue
        if a.partitions[p] != target:
            pending[(t, p)] = target
            start[(t, p)] = target
    if start:
        results = alter_reassignments(c.zk, c.cache, start)
        for key, (code, _msg) in results.items():
            if code != ErrorCode.none:
                pending.pop(key, None)
    if not pending:
        c._commit(lambda tx: tx.delete(zp.REASSIGN_PARTITIONS))

def finish_legacy_reassignment(c: Controller, t: str, p: int) -> None:
    zk = c.zk
    try:
        data, stat = zk.get(zp.REASSIGN_PARTITIONS)
    except NoNodeError:
        return
    wanted = zp.decode_reassignment(data)
    if (t, p) not in wanted:
        return
    del wanted[(t, p)]
    if wanted:
        c._commit(lambda tx: tx.set_data(zp.REASSIGN_PARTITIONS, zp.encode_reassignment(wanted),
                                            version=stat.version))
    else:
        c._commit(lambda tx: tx.delete(zp.REASSIGN_PARTITIONS, version=stat.version))
