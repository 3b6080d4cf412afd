"""Replica assignment, as Kafka's AdminUtils.assignReplicasToBrokers (pure, deterministic given the start index).

Rack-unaware: partition p's first replica is broker (p + start) mod n, followers are shifted by a per-round
amount so that leaders and followers spread evenly. Rack-aware (every broker has `broker.rack`): the broker
list alternates racks, and a follower is skipped while some rack (or broker) still has no replica.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from broker.errors import ErrorCode, KafkaError


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def rack_alternated(racks: Mapping[int, str]) -> list[int]:
    """Kafka's getRackAlternatedBrokerList: racks in name order, each contributing its next broker in turn."""
    by_rack: dict[str, list[int]] = {}
    for b in sorted(racks):
        by_rack.setdefault(racks[b], []).append(b)
    names = sorted(by_rack)
    iters = {r: iter(by_rack[r]) for r in names}
    out: list[int] = []
    i = 0
    while len(out) < len(racks):
        nxt = next(iters[names[i]], None)
        if nxt is not None:
            out.append(nxt)
        i = (i + 1) % len(names)
    return out


def assign_replicas(brokers: Mapping[int, str | None] | Sequence[int], partitions: int, replication_factor: int,
                    start_index: int = -1, start_partition: int = 0,
                    rng: random.Random | None = None) -> dict[int, tuple[int, ...]]:
    """{partition: replicas} for `partitions` new partitions numbered from `start_partition`.

    `brokers` maps broker id to rack (None when unknown), or is a plain list of ids. Rack-aware placement is
    used when every broker has a rack. `start_index` < 0 picks a random start (Kafka's behaviour)."""
    racks: dict[int, str | None] = dict(brokers) if isinstance(brokers, Mapping) else dict.fromkeys(brokers)
    if partitions < 0:
        raise KafkaError(ErrorCode.invalid_partitions, "Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise KafkaError(ErrorCode.invalid_replication_factor, "Replication factor must be larger than 0.")
    if replication_factor > len(racks):
        raise KafkaError(ErrorCode.invalid_replication_factor,
                         f"Replication factor: {replication_factor} larger than available brokers: {len(racks)}.")
    rng = rng or random.Random()
    rack_aware = all(racks.values()) and len(set(racks.values())) > 0
    order = rack_alternated({b: r for b, r in racks.items() if r}) if rack_aware else sorted(racks)
    n = len(order)
    start = start_index if start_index >= 0 else rng.randrange(n)
    shift = start_index if start_index >= 0 else rng.randrange(n)
    num_racks = len(set(racks.values())) if rack_aware else 1
    out: dict[int, tuple[int, ...]] = {}
    pid = max(0, start_partition)
    for _ in range(partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + start) % n
        replicas = [order[first]]
        if not rack_aware:
            for j in range(replication_factor - 1):
                replicas.append(order[_replica_index(first, shift, j, n)])
        else:
            racks_used = {racks[order[first]]}
            brokers_used = {order[first]}
            k = 0
            for _ in range(replication_factor - 1):
                while True:
                    b = order[_replica_index(first, shift * num_racks, k, n)]
                    k += 1
                    rack = racks[b]
                    if ((rack not in racks_used or len(racks_used) == num_racks)
                            and (b not in brokers_used or len(brokers_used) == n)):
                        replicas.append(b)
                        racks_used.add(rack)
                        brokers_used.add(b)
                        break
        out[pid] = tuple(replicas)
        pid += 1
    return out


def assign_new_partitions(brokers: Mapping[int, str | None], existing: Mapping[int, Sequence[int]],
                          total: int, rng: random.Random | None = None) -> dict[int, tuple[int, ...]]:
    """Replicas for partitions len(existing)..total-1 (CreatePartitions), continuing the existing layout:
    Kafka starts from the index of partition 0's first replica and keeps the existing replication factor."""
    current = len(existing)
    if total <= current:
        raise KafkaError(ErrorCode.invalid_partitions,
                         f"Topic currently has {current} partitions, {total} would not be an increase.")
    rf = len(existing[0]) if existing else 1
    racks = dict(brokers)
    all_racked = all(racks.values())
    order = rack_alternated({b: r for b, r in racks.items() if r}) if all_racked and racks else sorted(racks)
    first = existing[0][0] if existing and existing[0] else -1
    start = order.index(first) if first in order else -1
    return assign_replicas(racks, total - current, rf, start_index=start, start_partition=current, rng=rng)


def validate_manual_assignment(assignment: Mapping[int, Sequence[int]], live: set[int]) -> None:
    """CreateTopics/CreatePartitions/reassignment with explicit replicas: distinct, live, same size."""
    sizes = {len(r) for r in assignment.values()}
    for p, replicas in assignment.items():
        if not replicas:
            raise KafkaError(ErrorCode.invalid_replica_assignment, f"Empty replica list for partition {p}.")
        if len(set(replicas)) != len(replicas):
            raise KafkaError(ErrorCode.invalid_replica_assignment,
                             f"Duplicate brokers not allowed in replica assignment: {list(replicas)}.")
        dead = sorted(set(replicas) - live)
        if dead:
            raise KafkaError(ErrorCode.invalid_replica_assignment,
                             f"Unknown broker(s) in replica assignment: {dead}.")
    if len(sizes) > 1:
        raise KafkaError(ErrorCode.invalid_replica_assignment,
                         "All partitions should have the same number of replicas.")
