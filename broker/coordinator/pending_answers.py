"""The JoinGroup and SyncGroup answers members are waiting for (Kafka parks them as DelayedJoin/DelayedSync):
one future per (group, member), completed when the rebalance moves on, or with NOT_COORDINATOR when the
coordinator stops coordinating the group."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from broker.errors import ErrorCode


@dataclass
class JoinResult:
    """A JoinGroup answer. `members` (member_id, group_instance_id, metadata) is filled for the leader only."""

    error: ErrorCode
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    skip_assignment: bool = False


@dataclass
class SyncResult:
    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


class PendingAnswers:
    """Futures of the members waiting in JoinGroup and SyncGroup, keyed by (group id, member id)."""

    def __init__(self) -> None:
        self._join: dict[tuple[str, str], asyncio.Future[JoinResult]] = {}
        self._sync: dict[tuple[str, str], asyncio.Future[SyncResult]] = {}
        self._writes: set[asyncio.Task[None]] = set()

    def answer_after(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` (which answers members once a group write is replicated) apart from the request that made
        the write: that request's connection may close first, and the others still wait."""
        task = asyncio.ensure_future(work)
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    def await_join(self, group_id: str, member_id: str) -> asyncio.Future[JoinResult]:
        fut: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        self._join[(group_id, member_id)] = fut
        return fut

    def await_sync(self, group_id: str, member_id: str) -> asyncio.Future[SyncResult]:
        fut: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        self._sync[(group_id, member_id)] = fut
        return fut

    def resolve_join(self, group_id: str, member_id: str, result: JoinResult) -> None:
        fut = self._join.pop((group_id, member_id), None)
        if fut is not None and not fut.done():
            fut.set_result(result)

    def resolve_sync(self, group_id: str, member_id: str, result: SyncResult) -> None:
        fut = self._sync.pop((group_id, member_id), None)
        if fut is not None and not fut.done():
            fut.set_result(result)

    def not_coordinator(self, group_ids: list[str]) -> None:
        """The groups moved away: everyone waiting in them is told NOT_COORDINATOR and looks it up again."""
        for group_id in group_ids:
            for key in [k for k in self._join if k[0] == group_id]:
                self.resolve_join(*key, JoinResult(ErrorCode.not_coordinator, key[1]))
            for key in [k for k in self._sync if k[0] == group_id]:
                self.resolve_sync(*key, SyncResult(ErrorCode.not_coordinator))

    def close(self) -> None:
        """Answer every waiting member with NOT_COORDINATOR."""
        for task in self._writes:
            task.cancel()
        for key, fut in list(self._join.items()):
            if not fut.done():
                fut.set_result(JoinResult(ErrorCode.not_coordinator, key[1]))
        for sync in self._sync.values():
            if not sync.done():
                sync.set_result(SyncResult(ErrorCode.not_coordinator))
        self._join.clear()
        self._sync.clear()
