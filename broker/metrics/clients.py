"""What clients say about themselves: KIP-511 software name and version (ApiVersions v3+), counted per connection
as Kafka's Selector does, and KIP-724's deprecated request versions (as Kafka 3.9's request schemas mark them)."""

from __future__ import annotations

import re
from collections.abc import Callable

UNKNOWN = "unknown"
UNKNOWN_CLIENT = (UNKNOWN, UNKNOWN)  # ClientInformation.EMPTY: every connection starts as this
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")  # ApiVersionsRequest.isValid

# Kafka 3.9's "deprecatedVersions" of each request schema (clients/src/main/resources/common/message/*Request.json,
# as kafka-clients-3.9.2.jar has them): api key -> highest deprecated version; every range starts at 0. KIP-896's
# removals in 4.0 (e.g. Metadata 0-3, Produce 0-2) are not 3.9's deprecations: Metadata has none in 3.9.
DEPRECATED_UP_TO = {
    0: 2, 1: 3, 2: 0, 8: 1, 9: 0, 19: 1, 20: 0, 23: 1, 29: 0, 30: 0, 31: 0, 32: 0,
    34: 0, 35: 0, 38: 0, 39: 0, 40: 0, 41: 0,
}


def is_deprecated(api_key: int, version: int) -> bool:
    """ApiKeys.isVersionDeprecated, for Kafka 3.9."""
    return version <= DEPRECATED_UP_TO.get(api_key, -1)


def client_information(name: str | None, version: str | None) -> tuple[str, str] | None:
    """The ClientInformation an ApiVersions v3+ request registers, or None when the request is not valid (a field
    empty or off Kafka's pattern): then nothing is registered and the connection stays as it was."""
    if name is None or version is None or not (_SOFTWARE.fullmatch(name) and _SOFTWARE.fullmatch(version)):
        return None
    return name, version


class ConnectionsByClient:
    """Kafka's IntGaugeSuite for socket-server-metrics ``connections``: a count per (software name, version). A key
    that falls to 0 keeps its gauge until a new key needs room beyond `max_entries`; a new key when all
    `max_entries` are in use gets no gauge (Kafka logs and drops it)."""

    def __init__(self, on_add: Callable[[tuple[str, str]], None], on_remove: Callable[[tuple[str, str]], None],
                 max_entries: int = 100) -> None:
        self._counts: dict[tuple[str, str], int] = {}
        self._removable: dict[tuple[str, str], None] = {}  # insertion-ordered set
        self._on_add, self._on_remove = on_add, on_remove
        self._max = max_entries

    def value(self, key: tuple[str, str]) -> int:
        return self._counts.get(key, 0)

    def increment(self, key: tuple[str, str]) -> None:
        if key in self._counts:
            self._counts[key] += 1
            if self._counts[key] > 0:
                self._removable.pop(key, None)
            return
        if len(self._counts) >= self._max:
            if not self._removable:
                return
            old = next(iter(self._removable))
            del self._removable[old], self._counts[old]
            self._on_remove(old)
        self._counts[key] = 1
        self._on_add(key)

    def decrement(self, key: tuple[str, str]) -> None:
        if key not in self._counts:
            return
        self._counts[key] -= 1
        if self._counts[key] <= 0:
            self._removable[key] = None
