"""Client scenarios shared by the e2e suite (our broker) and the interop suite (ours and Apache Kafka 3.9).

Each scenario is a plain function taking a `Broker` (what the e2e `shared_broker`/`broker` fixtures and the
interop `backend` fixture all are) and a topic name, so one body runs against every backend; the test modules
only choose the parameters.  A difference between backends is stated in the scenario, with the reason.
"""

from __future__ import annotations

from typing import Protocol


class Broker(Protocol):
    """What a scenario needs of a broker: its address (`port` for the raw-wire helpers) and its log."""

    port: int

    @property
    def bootstrap(self) -> str: ...

    def log_tail(self, n: int = 60) -> str: ...
