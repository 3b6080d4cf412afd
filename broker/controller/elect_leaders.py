"""ElectLeaders (KIP-460, Kafka's KafkaController.onReplicaElection) on the controller thread: each partition's
verdict from election.py, the elections themselves written as one pipeline (controller._write_states)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from broker.controller import election
from broker.controller.state import PartitionState
from broker.errors import ErrorCode

if TYPE_CHECKING:
    from broker.controller.controller import Controller, Decide

PREFERRED, UNCLEAN = 0, 1
Results = dict[tuple[str, int], tuple[ErrorCode, str | None]]


def elect_leaders(c: Controller, election_type: int, partitions: Sequence[tuple[str, int]] | None) -> Results:
    """Per partition NONE, ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE or
    UNKNOWN_TOPIC_OR_PARTITION. With `partitions` None, every partition is tried and only attempted elections
    are reported."""
    cache = c.cache
    live = cache.live_broker_ids()
    shutting = cache.shutting_down_brokers()
    everything = partitions is None
    if partitions is None:
        partitions = sorted(cache.partition_states())

    def decide(s: PartitionState) -> election.Decision | None:
        if election_type == PREFERRED:
            return election.preferred(s.replicas, s.leader, s.isr, live, shutting)[1]
        return election.unclean_request(s.replicas, s.leader, s.isr, live)[1]

    out: Results = {}
    verdicts: dict[tuple[str, int], str] = {}
    for t, p in partitions:
        cur = cache.partition_state(t, p)
        if cur is None:
            out[(t, p)] = (ErrorCode.unknown_topic_or_partition, None)
        elif election_type == PREFERRED:
            verdicts[(t, p)] = election.preferred(cur.replicas, cur.leader, cur.isr, live, shutting)[0]
        else:
            verdicts[(t, p)] = election.unclean_request(cur.replicas, cur.leader, cur.isr, live)[0]
    to_write: list[tuple[str, int, Decide]] = [(t, p, decide) for (t, p), v in verdicts.items() if v == "elected"]
    written = c._write_states(to_write)
    for (t, p), verdict in verdicts.items():
        if verdict == "elected" and (t, p) not in written:
            verdict = "not_available"
        result = _result(t, p, verdict, election_type, everything)
        if result is not None:
            out[(t, p)] = result
    return out


def _result(t: str, p: int, verdict: str, election_type: int, everything: bool
            ) -> tuple[ErrorCode, str | None] | None:
    """None: not reported (not needed, and the request named no partitions)."""
    if verdict == "elected":
        return ErrorCode.none, None
    if verdict == "not_needed":
        if everything:
            return None
        return ErrorCode.election_not_needed, f"Leader election not needed for topic partition {t}-{p}"
    if election_type == PREFERRED:
        return (ErrorCode.preferred_leader_not_available,
                f"Failed to elect leader for partition {t}-{p} under strategy "
                "PreferredReplicaPartitionLeaderElectionStrategy")
    return (ErrorCode.eligible_leaders_not_available,
            f"Failed to elect leader for partition {t}-{p} under strategy OfflinePartitionLeaderElectionStrategy")
