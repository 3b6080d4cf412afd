"""Delayed operations keyed by partition: a waiter completes when any of its keys is touched, or expires.

Kafka's DelayedFetch and DelayedProduce are completed by the thread that appends or moves the high watermark
(DelayedOperationPurgatory.checkAndComplete). Here the notifier resolves the waiter's future, and the waiting
handler resumes on the event loop's very next turn: the waiter awaits that future itself, with the timeout a
timer that resolves it too (asyncio.wait_for would add a turn: its own waiter is resolved by a callback of ours).

Kafka completes the delayed operations of a key in its handler thread, DelayedProduce first, and its network
threads send the answers in parallel. Here a waiter with a completer (a Fetch, an acks=all Produce) is completed
inside `notify`: its answer is built and queued before the notifier goes on, with no turn of the loop and no
resumed coroutine in between. Fetches are completed first, in the order they parked, then produces: the answers
go out together in one system call at the next turn (broker/network/send_batch.py), the consumers' first, since
the consumers' copy of a record is what end-to-end latency waits for. A waiter without a completer resumes on the
next turn. One whose completer is not satisfied yet (a fetch short of its min_bytes, a produce with a partition
still undecided) stays watched and parked, as Kafka keeps a delayed operation until it completes or expires.
"""

from __future__ import annotations

import asyncio
import enum
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager


class Attempt(enum.Enum):
    """What a completer made of a notify (Kafka's DelayedOperation.tryComplete)."""

    COMPLETED = "completed"   # answered: the waiter is resolved, and resumes only to return
    WATCH = "watch"           # not satisfied yet (less than min_bytes, a partition undecided): stays parked
    RESUME = "resume"         # the waiter resumes on the next turn and finishes the operation itself


# Called inside notify with the keys notified that the waiter watches.
Completer = Callable[[list], Attempt]


def _resolve(fut: asyncio.Future[bool], woken: bool) -> None:
    if not fut.done():
        fut.set_result(woken)


class Purgatory:
    """Kafka's purgatory, reduced to what an asyncio broker needs: watch keys, wake on notify."""

    def __init__(self) -> None:
        self._watchers: dict[Hashable, dict[asyncio.Future, str]] = defaultdict(dict)  # waiter -> its kind
        self._delayed: Counter[str] = Counter()  # operations waiting, per kind (NumDelayedOperations)
        self._watched: Counter[str] = Counter()  # watch entries, per kind (PurgatorySize)
        self._woken_keys: dict[asyncio.Future, list] = {}  # waiter -> the keys notified while it waited
        self._completers: dict[asyncio.Future, Completer] = {}
        self._held = 0   # nesting depth of `held`
        self._pending: dict[Hashable, None] = {}   # keys notified while held, in order

    async def wait(self, keys: Iterable[Hashable], timeout_s: float, kind: str = "Fetch",
                   woken: list | None = None, complete: Completer | None = None) -> bool:
        """Wait until one of `keys` is notified (True) or `timeout_s` passes (False). With `woken`, every key
        notified before the waiter resumes is appended to it (a fetch then re-reads only those partitions).
        With `complete`, a notify first calls it with the keys (Kafka's DelayedOperation.tryComplete): COMPLETED
        resolves the waiter; WATCH keeps it watching those keys; neither adds them to `woken`. RESUME wakes it,
        with the keys in `woken`. An exception in it is the completer's to handle; it must not escape
        into the notifier."""
        keys = list(keys)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()
        if woken is not None:
            self._woken_keys[fut] = woken
        if complete is not None:
            self._completers[fut] = complete
        for k in keys:
            self._watchers[k][fut] = kind
        self._delayed[kind] += 1
        self._watched[kind] += len(keys)
        timer = loop.call_later(max(timeout_s, 0.0), _resolve, fut, False)
        try:
            return await fut
        finally:
            timer.cancel()
            if woken is not None:
                del self._woken_keys[fut]
            if complete is not None:
                del self._completers[fut]
            self._delayed[kind] -= 1
            self._watched[kind] -= len(keys)
            for k in keys:
                watchers = self._watchers.get(k)
                if watchers is not None:
                    watchers.pop(fut, None)
                    if not watchers:
                        del self._watchers[k]

    def notify(self, key: Hashable) -> None:
        """Complete or wake the operations watching `key`; while held, only noted (see `held`)."""
        if self._held:
            self._pending.setdefault(key, None)
            return
        self._notify_all((key,))

    @contextmanager
    def held(self) -> Iterator[None]:
        """Notifications inside the block are delivered at its end, each waiter's together: a Produce that appends
        to several partitions of one leader completes a follower's parked fetch once, with all of them, as
        Kafka's ReplicaManager completes delayed fetches after the whole append (its action queue). The block
        must not await: other requests' notifications would wait for it."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            if not self._held and self._pending:
                keys, self._pending = list(self._pending), {}
                self._notify_all(keys)

    def _notify_all(self, keys: Iterable[Hashable]) -> None:
        waiting: dict[asyncio.Future, list] = {}   # waiter -> the keys of `keys` it watches, in park order
        kinds: dict[asyncio.Future, str] = {}
        for key in keys:
            for fut, kind in self._watchers.pop(key, {}).items():
                waiting.setdefault(fut, []).append(key)
                kinds[fut] = kind
        completing, produces = [], []
        completers = self._completers
        for fut, moved in waiting.items():   # in the order they parked; a fetch without a completer resumes first
            if completers and fut in completers and not fut.done():
                completing.append((fut, moved))
            elif kinds[fut] == "Produce":
                produces.append(fut)
            else:
                self._wake(fut, moved)
        # Produces without a completer are woken before the completions run: each resumes on the next turn and
        # queues its acknowledgement before the batch the completed answers are queued in goes out (that batch is
        # scheduled by its first answer). Woken after, they would miss that batch and be answered only once the
        # consumers just woken let the broker have its core back.
        for fut in produces:
            _resolve(fut, True)
        # Fetches are completed before produces: the consumers' answers come first in the batch.
        completing.sort(key=lambda waiter: kinds[waiter[0]] == "Produce")
        for fut, moved in completing:
            # A waiter completed meanwhile (by a completion this one set off) still learns the keys.
            attempt = Attempt.RESUME if fut.done() else completers[fut](moved)
            if attempt is Attempt.COMPLETED:
                _resolve(fut, True)
            elif attempt is Attempt.WATCH:   # as Kafka keeps an operation watched until it completes or expires
                for key in moved:   # not noted in `woken`: the completer keeps what it was told
                    self._watchers[key][fut] = kinds[fut]
            else:
                self._wake(fut, moved)

    def _wake(self, fut: asyncio.Future[bool], moved: list) -> None:
        """Resume a waiter on the next turn, telling it the keys (if it asked, `woken`)."""
        if self._woken_keys and (noted := self._woken_keys.get(fut)) is not None:
            noted.extend(moved)
        _resolve(fut, True)

    def delayed(self, kind: str) -> int:
        return self._delayed[kind]

    def watched(self, kind: str) -> int:
        return self._watched[kind]

    def __len__(self) -> int:
        return len({f for s in self._watchers.values() for f in s})
