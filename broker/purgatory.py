"""Delayed operations keyed by partition: a waiter completes when any of its keys is touched, or expires."""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable


class Purgatory:
    """Kafka's purgatory, reduced to what an asyncio broker needs: watch keys, wake on notify."""

    def __init__(self) -> None:
        self._watchers: dict[Hashable, set[asyncio.Future]] = defaultdict(set)
        self._delayed: Counter[str] = Counter()  # operations waiting, per kind (NumDelayedOperations)
        self._watched: Counter[str] = Counter()  # watch entries, per kind (PurgatorySize)

    async def wait(self, keys: Iterable[Hashable], timeout_s: float, kind: str = "Fetch") -> bool:
        """Wait until one of `keys` is notified (True) or `timeout_s` passes (False)."""
        keys = list(keys)
        fut = asyncio.get_running_loop().create_future()
        for k in keys:
            self._watchers[k].add(fut)
        self._delayed[kind] += 1
        self._watched[kind] += len(keys)
        try:
            await asyncio.wait_for(fut, timeout_s)
            return True
        except TimeoutError:
            return False
        finally:
            self._delayed[kind] -= 1
            self._watched[kind] -= len(keys)
            for k in keys:
                watchers = self._watchers.get(k)
                if watchers is not None:
                    watchers.discard(fut)
                    if not watchers:
                        del self._watchers[k]

    def notify(self, key: Hashable) -> None:
        for fut in self._watchers.pop(key, ()):
            if not fut.done():
                fut.set_result(None)

    def delayed(self, kind: str) -> int:
        return self._delayed[kind]

    def watched(self, kind: str) -> int:
        return self._watched[kind]

    def __len__(self) -> int:
        return len({f for s in self._watchers.values() for f in s})
