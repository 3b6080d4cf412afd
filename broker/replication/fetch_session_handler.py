"""The follower's side of an incremental fetch session (KIP-227), Kafka's FetchSessionHandler, reduced to one
fetcher: which partitions the next Fetch must name, and what an answer's session id and error mean.

Without a session every follower Fetch names every partition the follower replicates from that leader, and the
leader answers every one of them: with tens of partitions each round trip of an acks=all record carries them all
through both encoders and decoders. In a session the request names only partitions whose fetch state changed (a
new fetch offset after an append, a new leader epoch), plus those to forget; the leader answers only partitions
with news. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from broker.errors import ErrorCode
from broker.fetch_session import next_epoch

INITIAL_EPOCH = 0  # FetchMetadata.INITIAL_EPOCH: a full fetch that asks for a new session
# (partition, current_leader_epoch, fetch_offset, log_start_offset, partition_max_bytes), as fetch_request takes it
FetchPartition = tuple[int, int, int, int, int]
Key = tuple[str, int]
SESSION_ERRORS = frozenset((ErrorCode.fetch_session_id_not_found, ErrorCode.invalid_fetch_session_epoch))


@dataclass
class FetchPlan:
    """One Fetch's session fields and contents: topics to name (grouped) and partitions to forget."""

    session_id: int
    epoch: int
    topics: list[tuple[str, list[FetchPartition]]]
    forgotten: list[tuple[str, list[int]]]
    full: bool
    sent: dict[Key, FetchPartition] = field(default_factory=dict)


def _grouped(items: Mapping[Key, FetchPartition]) -> list[tuple[str, list[FetchPartition]]]:
    topics: dict[str, list[FetchPartition]] = {}
    for (topic, _), p in items.items():
        topics.setdefault(topic, []).append(p)
    return list(topics.items())


class FetchSessionHandler:
    """The session with one leader: `plan` the next Fetch, then `on_response` with the answer's top-level error
    and session id (True if the answer can be used; False after a session error, the next plan is full)."""

    def __init__(self) -> None:
        self.session_id = 0
        self.epoch = INITIAL_EPOCH
        self._acknowledged: dict[Key, FetchPartition] = {}  # what the leader's session holds for each partition

    def plan(self, wanted: Mapping[Key, FetchPartition]) -> FetchPlan:
        """The next Fetch for the partitions `wanted` now (their current fetch state)."""
        if self.session_id == 0:
            return FetchPlan(0, INITIAL_EPOCH, _grouped(wanted), [], True, dict(wanted))
        changed = {k: p for k, p in wanted.items() if self._acknowledged.get(k) != p}
        gone: dict[str, list[int]] = {}
        for topic, partition in self._acknowledged.keys() - wanted.keys():
            gone.setdefault(topic, []).append(partition)
        return FetchPlan(self.session_id, self.epoch, _grouped(changed), sorted(gone.items()), False, dict(wanted))

    def on_response(self, plan: FetchPlan, error_code: int, session_id: int) -> bool:
        if error_code in SESSION_ERRORS:
            self.reset()  # the leader lost or moved on from the session: start over with a full fetch
            return False
        if error_code != ErrorCode.none:
            return True  # another top-level error: the session, if any, stands (Kafka's handler does the same)
        if plan.full:
            self.session_id = session_id  # 0: the leader keeps no session (full fetches go on)
            self.epoch = next_epoch(INITIAL_EPOCH) if session_id else INITIAL_EPOCH
        else:
            self.epoch = next_epoch(self.epoch)
        self._acknowledged = plan.sent if self.session_id else {}
        return True

    def reset(self) -> None:
        """Forget the session (a new connection, or a session error): the next Fetch is full."""
        self.session_id = 0
        self.epoch = INITIAL_EPOCH
        self._acknowledged = {}
