"""Leader election decisions (pure): what the controller writes into a partition's state znode.

Each function takes the replica assignment, the current leader/ISR and the live brokers and returns the
new (leader, isr) or None when nothing is to be written. The controller bumps the leader epoch on every write,
as Kafka's ZooKeeper-mode controller did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from broker.controller.state import NO_LEADER


@dataclass(frozen=True)
class Decision:
    leader: int
    isr: tuple[int, ...]
    unclean: bool = False

    @property
    def online(self) -> bool:
        return self.leader != NO_LEADER


def initial(replicas: Sequence[int], live: set[int]) -> Decision | None:
    """A new partition: the first live replica leads, the live replicas form the ISR (None: none alive)."""
    alive = tuple(r for r in replicas if r in live)
    if not alive:
        return None
    return Decision(alive[0], alive)


def clean_leader(replicas: Sequence[int], isr: Iterable[int], live: set[int],
                 exclude: AbstractSet[int] = frozenset()) -> int | None:
    """Kafka's OfflinePartitionLeaderElection, clean part: first replica (assignment order) in ISR ∩ live."""
    isr_set = set(isr)
    return next((r for r in replicas if r in isr_set and r in live and r not in exclude), None)


def offline(replicas: Sequence[int], isr: Sequence[int], live: set[int], unclean_enabled: bool,
            exclude: AbstractSet[int] = frozenset(), last_leader: int = NO_LEADER) -> Decision:
    """The leader is gone (dead, shut down, or no longer a replica): elect from ISR ∩ live; failing that, the
    first live replica when unclean election is enabled; failing that, offline (leader -1) with the ISR
    kept to its last member (as Kafka keeps it) so that this replica can be cleanly elected when it returns."""
    leader = clean_leader(replicas, isr, live, exclude)
    if leader is not None:
        return Decision(leader, tuple(r for r in isr if r in live and r in replicas))
    if unclean_enabled:
        leader = next((r for r in replicas if r in live and r not in exclude), None)
        if leader is not None:
            return Decision(leader, (leader,), unclean=True)
    in_replicas = tuple(r for r in isr if r in replicas)
    if last_leader in in_replicas:
        return Decision(NO_LEADER, (last_leader,))
    return Decision(NO_LEADER, in_replicas[-1:] if in_replicas else tuple(isr[-1:]))


def leader_moves(replicas: Sequence[int], leader: int, live: AbstractSet[int],
                 shutting_down: AbstractSet[int] = frozenset()) -> bool:
    """Whether `reconcile` would elect (the leader is gone, not a replica, or shutting down): the partitions
    Kafka's KafkaController.onReplicasBecomeOffline moves first (PartitionStateMachine to OnlinePartition),
    before the ReplicaStateMachine takes the dead replicas out of the other partitions' ISRs."""
    return leader == NO_LEADER or leader not in live or leader not in replicas or leader in shutting_down


def reconcile(replicas: Sequence[int], leader: int, isr: Sequence[int], live: set[int], unclean_enabled: bool,
              shutting_down: AbstractSet[int] = frozenset()) -> Decision | None:
    """What a partition's state should become given the live brokers (None: leave it).

    - leader not live / not a replica / shutting down → `offline` election (shutting-down brokers excluded;
      a shutting-down leader keeps leadership when nobody else can take it);
    - otherwise drop dead, shutting-down and non-replica members from the ISR (never the leader itself)."""
    repl = set(replicas)
    if leader == NO_LEADER or leader not in live or leader not in repl:
        d = offline(replicas, isr, live, unclean_enabled, exclude=shutting_down, last_leader=leader)
        if d.leader == NO_LEADER:
            # A shutting-down broker is still better than nothing.
            fallback = offline(replicas, isr, live, False, last_leader=leader)
            if fallback.online:
                d = fallback
        if d.leader == leader and tuple(d.isr) == tuple(isr):
            return None
        return d
    if leader in shutting_down:
        new = clean_leader(replicas, isr, live, exclude=shutting_down)
        if new is not None:
            return Decision(new, tuple(r for r in isr if r in live and r in repl and r not in shutting_down))
    keep = tuple(r for r in isr if r == leader or (r in live and r in repl and r not in shutting_down))
    if keep != tuple(isr):
        return Decision(leader, keep)
    return None


def preferred(replicas: Sequence[int], leader: int, isr: Sequence[int], live: set[int],
              shutting_down: AbstractSet[int] = frozenset()) -> tuple[str, Decision | None]:
    """Preferred-replica election: ("elected", decision), ("not_needed", None) or ("not_available", None)."""
    if not replicas:
        return "not_available", None
    pref = replicas[0]
    if leader == pref:
        return "not_needed", None
    if pref in isr and pref in live and pref not in shutting_down:
        return "elected", Decision(pref, tuple(isr))
    return "not_available", None


def unclean_request(replicas: Sequence[int], leader: int, isr: Sequence[int],
                    live: set[int]) -> tuple[str, Decision | None]:
    """ElectLeaders with election_type=1: only for partitions without a live leader; clean first."""
    if leader != NO_LEADER and leader in live:
        return "not_needed", None
    d = offline(replicas, isr, live, unclean_enabled=True)
    if not d.online:
        return "not_available", None
    return "elected", d


def imbalance(partitions: Iterable[tuple[Sequence[int], int]]) -> dict[int, tuple[int, int]]:
    """Per preferred broker: (partitions it should lead, partitions it does not lead) — Kafka's
    checkAndTriggerAutoLeaderRebalance input. Takes (replicas, current leader) pairs."""
    out: dict[int, list[int]] = {}
    for replicas, leader in partitions:
        if not replicas:
            continue
        entry = out.setdefault(replicas[0], [0, 0])
        entry[0] += 1
        if leader != replicas[0]:
            entry[1] += 1
    return {b: (total, off) for b, (total, off) in out.items()}


def imbalance_ratio(total_and_off: tuple[int, int]) -> float:
    total, off = total_and_off
    return off / total if total else 0.0


def imbalanced_brokers(partitions: Iterable[tuple[Sequence[int], int]], percentage: int) -> set[int]:
    """Brokers whose imbalance ratio exceeds leader.imbalance.per.broker.percentage."""
    return {b for b, v in imbalance(partitions).items() if imbalance_ratio(v) > percentage / 100}


def preferred_imbalance_count(partitions: Iterable[tuple[Sequence[int], int]]) -> int:
    """Kafka's PreferredReplicaImbalanceCount: partitions not led by their preferred replica."""
    return sum(off for _, off in imbalance(partitions).values())


def unclean_enabled(topic_configs: Mapping[str, str], broker_default: bool) -> bool:
    v = topic_configs.get("unclean.leader.election.enable")
    return broker_default if v is None else v.strip().lower() == "true"
