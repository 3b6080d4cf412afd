"""Delayed operations keyed by partition: a waiter completes when any of its keys is touched, or expires.

Kafka's DelayedFetch and DelayedProduce are completed by the thread that appends or moves the high watermark
(DelayedOperationPurgatory.checkAndComplete). Here the notifier resolves the waiter's future, and the waiting
handler resumes on the event loop's very next turn: the waiter awaits that future itself, with the timeout a
timer that resolves it too (asyncio.wait_for would add a turn: its own waiter is resolved by a callback of ours).

Kafka completes the delayed operations of a key in its handler thread and its network threads send the answers in
parallel; here the waiters resume in turn and their answers go out together at the end of the loop's turn
(broker/network/send_batch.py), in the order they resumed. A high watermark move wakes the fetches first, then
the produces (Kafka checks DelayedProduce first): the consumers' copy of a record is what end-to-end latency waits
for, and it is first in the batch.
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable


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

    async def wait(self, keys: Iterable[Hashable], timeout_s: float, kind: str = "Fetch",
                   woken: list | None = None) -> bool:
        """Wait until one of `keys` is notified (True) or `timeout_s` passes (False). With `woken`, every key
        notified before the waiter resumes is appended to it (a fetch then re-reads only those partitions)."""
        keys = list(keys)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()
        if woken is not None:
            self._woken_keys[fut] = woken
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
            self._delayed[kind] -= 1
            self._watched[kind] -= len(keys)
            for k in keys:
                watchers = self._watchers.get(k)
                if watchers is not None:
                    watchers.pop(fut, None)
                    if not watchers:
                        del self._watchers[k]

    def notify(self, key: Hashable) -> None:
        waiters = self._watchers.pop(key, None)
        if not waiters:
            return
        produces = []
        woken_keys = self._woken_keys
        for fut, kind in waiters.items():   # fetches resume first, in the order they parked
            if woken_keys:
                keys = woken_keys.get(fut)
                if keys is not None:
                    keys.append(key)
            if kind == "Produce":
                produces.append(fut)
            else:
                _resolve(fut, True)
        for fut in produces:
            _resolve(fut, True)

    def delayed(self, kind: str) -> int:
        return self._delayed[kind]

    def watched(self, kind: str) -> int:
        return self._watched[kind]

    def __len__(self) -> int:
        return len({f for s in self._watchers.values() for f in s})
