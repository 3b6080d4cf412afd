"""Pure ISR and high-watermark decisions of a partition leader (Kafka's Partition/Replica logic).

Nothing here does I/O or reads a clock: callers pass `now_ms` and the follower states they track.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass
class FollowerState:
    """What the leader knows of one follower, from its Fetch requests."""

    log_end_offset: int = -1
    last_caught_up_ms: int = 0
    last_fetch_leader_leo: int = -1
    last_fetch_ms: int = 0

    def on_fetch(self, fetch_offset: int, leader_leo: int, now_ms: int) -> None:
        """Kafka's Replica.updateFetchState: caught up now if it asked for the leader's log end offset; caught
        up as of its previous fetch if it asked for what the leader's log end offset was back then."""
        if fetch_offset >= leader_leo:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_leo:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_leo = leader_leo
        self.last_fetch_ms = now_ms


def out_of_sync_replicas(leader_id: int, isr: Iterable[int], followers: Mapping[int, FollowerState],
                         now_ms: int, lag_time_max_ms: int) -> set[int]:
    """ISR followers that have not caught up within replica.lag.time.max.ms."""
    return {r for r in isr if r != leader_id
            and now_ms - followers.get(r, FollowerState()).last_caught_up_ms > lag_time_max_ms}


def can_join_isr(follower: FollowerState, high_watermark: int, epoch_start_offset: int) -> bool:
    """A follower rejoins once it has everything up to the high watermark and into the current epoch."""
    return follower.log_end_offset >= max(high_watermark, epoch_start_offset)


def high_watermark(leader_id: int, leader_leo: int, isr: Iterable[int],
                   followers: Mapping[int, FollowerState], current: int) -> int:
    """Smallest log end offset among ISR members; it never goes backwards."""
    leos = [leader_leo] + [followers.get(r, FollowerState()).log_end_offset for r in isr if r != leader_id]
    return max(current, min(leos))
